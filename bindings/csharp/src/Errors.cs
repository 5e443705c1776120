using System;

namespace Zerfoo
{
    /// <summary>The library's status codes (zf_status). Open-ended: a newer library may return a
    /// value not listed here; it still arrives in <see cref="ZerfooException.Status"/>.</summary>
    public enum Status
    {
        Ok = 0,
        InvalidArgument = 1,
        IO = 2,
        Format = 3,
        Unsupported = 4,
        OutOfMemory = 5,
        BufferTooSmall = 6,
        NotFound = 7,
        InvalidUtf8 = 8,
        ContextFull = 9,
        Cancelled = 10,
        Backend = 11,
        Internal = 12,
    }

    /// <summary>A failed zerfoo call: the status code and the library's message (read from
    /// zf_last_error on the failing thread right after the call).</summary>
    public class ZerfooException : Exception
    {
        public ZerfooException(Status status, string message) : base(message) { Status = status; }

        /// <summary>The status code (possibly a value newer than this binding's enum).</summary>
        public Status Status { get; private set; }

        /// <summary>The code's name as the library spells it, e.g. "ZF_ERR_FORMAT".</summary>
        public string StatusName
        {
            get
            {
                try { return Library.Utf8(NativeMethods.zf_status_string((int)Status)); }
                catch (Exception) { return "ZF_ERR_" + Status; }
            }
        }

        /// <summary>Throws for a nonzero status, with zf_last_error() of this thread. Call it
        /// immediately after the failing call, on the same thread, with no zerfoo call between.</summary>
        internal static void Check(int status, string what)
        {
            if (status == 0) return;
            string detail = Library.Utf8(NativeMethods.zf_last_error());
            string name = Library.Utf8(NativeMethods.zf_status_string(status));
            throw new ZerfooException((Status)status,
                what + ": " + name + (string.IsNullOrEmpty(detail) ? "" : ": " + detail));
        }
    }

    /// <summary>libzerfoo could not be loaded, or the loaded one is older than this binding needs.
    /// The message names every place that was tried and why each failed.</summary>
    public sealed class ZerfooLibraryException : ZerfooException
    {
        public ZerfooLibraryException(Status status, string message) : base(status, message) { }
    }
}

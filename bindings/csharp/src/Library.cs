using System;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using System.Text;

namespace Zerfoo
{
    /// <summary>Finds libzerfoo once per process and checks its version. Every public entry point
    /// of the binding calls <see cref="EnsureLoaded"/> first, so a missing or too-old library is
    /// one <see cref="ZerfooLibraryException"/> at the first use, never an
    /// EntryPointNotFoundException or a crash later.</summary>
    /// <remarks>Search order: the file named by $ZERFOO_LIBRARY (only that file when it is set),
    /// else the platform's loader for libzerfoo.so.0 (LD_LIBRARY_PATH, the ldconfig cache, the
    /// directory of Zerfoo.dll). Under Mono the DllImport name "zerfoo" is mapped to
    /// libzerfoo.so.0 by Zerfoo.dll.config, and $ZERFOO_LIBRARY is dlopen'ed before the first
    /// DllImport binds: the dynamic loader then resolves "libzerfoo.so.0" to the library already
    /// loaded (same SONAME). On .NET 5+ a DllImportResolver does the same (Library.Net.cs).</remarks>
    public static partial class Library
    {
        /// <summary>The environment variable naming the library file to load.</summary>
        public const string EnvVar = "ZERFOO_LIBRARY";

        /// <summary>The file name the default loader is asked for on this platform.</summary>
        public static string DefaultName
        {
            get
            {
                if (IsWindows) return "zerfoo.dll";
                if (IsMac) return "libzerfoo.0.dylib";
                return "libzerfoo.so.0";
            }
        }

        static readonly object Gate = new object();
        static volatile bool loaded;
        static string source;

        /// <summary>Loads and checks the library (idempotent, thread-safe).</summary>
        /// <exception cref="ZerfooLibraryException">Not found, or an incompatible version.</exception>
        public static void EnsureLoaded()
        {
            if (loaded) return;
            lock (Gate)
            {
                if (loaded) return;
                string env = Environment.GetEnvironmentVariable(EnvVar);
                string tried;
                PlatformInit();  // .NET: registers the DllImportResolver
                if (!string.IsNullOrEmpty(env))
                {
                    tried = "$" + EnvVar + "=" + env;
                    string err = Preload(env);
                    if (err != null)
                        throw new ZerfooLibraryException(Status.IO,
                            "cannot load libzerfoo: " + tried + ": " + err);
                }
                else
                {
                    tried = "$" + EnvVar + " (unset), then the default loader for " + DefaultName +
                            " (LD_LIBRARY_PATH, ldconfig, the directory of Zerfoo.dll" +
                            (IsMono ? "; Zerfoo.dll.config maps DllImport \"zerfoo\" to it" : "") + ")";
                }
                uint v;
                try
                {
                    v = NativeVersion();
                }
                catch (DllNotFoundException e)
                {
                    throw new ZerfooLibraryException(Status.IO,
                        "cannot load libzerfoo: tried " + tried + ": " + e.Message);
                }
                catch (EntryPointNotFoundException e)
                {
                    throw new ZerfooLibraryException(Status.Unsupported,
                        "the library found (" + tried + ") is not libzerfoo (no zf_version): " + e.Message);
                }
                int major = (int)(v / 1000000), minor = (int)(v / 1000 % 1000), patch = (int)(v % 1000);
                if (major != NativeMethods.HeaderMajor || minor < NativeMethods.HeaderMinor)
                {
                    throw new ZerfooLibraryException(Status.Unsupported, string.Format(
                        "libzerfoo {0}.{1}.{2} found ({3}) is incompatible: this binding needs {4}.x with x >= {5}",
                        major, minor, patch, tried, NativeMethods.HeaderMajor, NativeMethods.HeaderMinor));
                }
                source = string.IsNullOrEmpty(env) ? DefaultName : env;
                loaded = true;
            }
        }

        // Mono binds a DllImport when it compiles the method that calls it, and a failed bind
        // stays failed. So no method that can run before the library is loaded calls a zerfoo
        // DllImport directly: they call EnsureLoaded, then a separate method that is not inlined
        // (compiled only when reached). Instance methods of Model and Session run only after
        // a load, and Model.Load follows the same split.
        [MethodImpl(MethodImplOptions.NoInlining)]
        static uint NativeVersion() { return NativeMethods.zf_version(); }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static string NativeVersionString() { return Utf8(NativeMethods.zf_version_string()); }

        /// <summary>The loaded library's version as text, e.g. "0.4.0".</summary>
        public static string Version
        {
            get { EnsureLoaded(); return NativeVersionString(); }
        }

        /// <summary>The loaded library's version encoded as MAJOR*1000000 + MINOR*1000 + PATCH.</summary>
        public static uint VersionNumber
        {
            get { EnsureLoaded(); return NativeVersion(); }
        }

        /// <summary>What was loaded: the $ZERFOO_LIBRARY path or the default name.</summary>
        public static string Source
        {
            get { EnsureLoaded(); return source; }
        }

        /// <summary>Whether a device (see <see cref="Device"/>) can run here; when not, the
        /// reason is thrown as a ZerfooException by <see cref="CheckBackend"/>.</summary>
        public static bool BackendAvailable(Device device)
        {
            EnsureLoaded();
            return NativeBackend(device) == 0;
        }

        /// <summary>Throws the library's reason when a device cannot run here.</summary>
        public static void CheckBackend(Device device)
        {
            EnsureLoaded();
            ZerfooException.Check(NativeBackend(device), "backend " + device);
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static int NativeBackend(Device device) { return NativeMethods.zf_backend_available((int)device); }

        // ------------------------------------------------------------------ logging

        static Action<LogLevel, string> logSink;
        static readonly zf_log_cb LogTrampolineDelegate = LogTrampoline;  // lives forever

        /// <summary>Routes the library's log lines to <paramref name="sink"/> (null restores
        /// stderr). Process-wide; the sink may be called from any thread calling into zerfoo.</summary>
        public static void SetLogCallback(Action<LogLevel, string> sink)
        {
            EnsureLoaded();
            logSink = sink;
            SetLogCallbackCore(sink != null);
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void SetLogCallbackCore(bool on)
        {
            ZerfooException.Check(NativeMethods.zf_set_log_callback(on ? LogTrampolineDelegate : null, IntPtr.Zero),
                                  "zf_set_log_callback");
        }

        /// <summary>The minimum level delivered (default Warn).</summary>
        public static void SetLogLevel(LogLevel level)
        {
            EnsureLoaded();
            SetLogLevelCore(level);
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void SetLogLevelCore(LogLevel level)
        {
            ZerfooException.Check(NativeMethods.zf_set_log_level((int)level), "zf_set_log_level");
        }

        [MonoPInvokeCallback(typeof(zf_log_cb))]
        static int LogTrampoline(IntPtr userData, int level, IntPtr msg)
        {
            try
            {
                Action<LogLevel, string> s = logSink;
                if (s != null) s((LogLevel)level, Utf8(msg));
            }
            catch (Exception)
            {
                // An exception must not unwind into native code; a log sink cannot report one.
            }
            return 0;
        }

        // ------------------------------------------------------------------ helpers

        /// <summary>Set by Library.Net.cs on .NET 5+.</summary>
        static partial void PlatformInit();

        internal static bool IsMono { get { return Type.GetType("Mono.Runtime") != null; } }

        static bool IsWindows
        {
            get { return Environment.OSVersion.Platform == PlatformID.Win32NT; }
        }

        static bool IsMac
        {
            get
            {
                // Mono reports Unix on macOS; the kernel name tells them apart.
                return Environment.OSVersion.Platform == PlatformID.MacOSX ||
                       (Environment.OSVersion.Platform == PlatformID.Unix && System.IO.Directory.Exists("/System/Library"));
            }
        }

        /// <summary>Loads a library file so that later DllImports of its SONAME bind to it.
        /// Returns null on success, else the loader's message.</summary>
        static string Preload(string path)
        {
            if (!System.IO.File.Exists(path)) return "no such file";
#if NET5_0_OR_GREATER
            return PreloadNet(path);
#else
            return IsWindows ? PreloadWindows(path) : PreloadUnix(path);
#endif
        }

#if !NET5_0_OR_GREATER
        [MethodImpl(MethodImplOptions.NoInlining)]
        static string PreloadWindows(string path)
        {
            return Win32.LoadLibraryW(path) != IntPtr.Zero ? null
                : "LoadLibrary failed (error " + Marshal.GetLastWin32Error() + ")";
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static string PreloadUnix(string path)
        {
            const int RTLD_NOW = 2;
            int rtldGlobal = IsMac ? 8 : 0x100;
            try { return Check(LibDl2.dlopen(path, RTLD_NOW | rtldGlobal), true); }
            catch (DllNotFoundException) { }
            catch (EntryPointNotFoundException) { }
            return Check(LibC.dlopen(path, RTLD_NOW | rtldGlobal), false);
        }

        static string Check(IntPtr handle, bool libdl)
        {
            if (handle != IntPtr.Zero) return null;
            return Utf8(libdl ? LibDl2.dlerror() : LibC.dlerror());
        }

        // dlopen lives in libdl.so.2 on glibc < 2.34 (a stub forwarding to libc after), and in
        // libSystem on macOS (reached through "libc", which Mono maps there).
        static class LibDl2
        {
            [DllImport("libdl.so.2", CharSet = CharSet.Ansi, BestFitMapping = false, ThrowOnUnmappableChar = true)]
            internal static extern IntPtr dlopen(string file, int mode);
            [DllImport("libdl.so.2")]
            internal static extern IntPtr dlerror();
        }

        static class LibC
        {
            [DllImport("libc", CharSet = CharSet.Ansi, BestFitMapping = false, ThrowOnUnmappableChar = true)]
            internal static extern IntPtr dlopen(string file, int mode);
            [DllImport("libc")]
            internal static extern IntPtr dlerror();
        }

        static class Win32
        {
            [DllImport("kernel32", CharSet = CharSet.Unicode, SetLastError = true)]
            internal static extern IntPtr LoadLibraryW(string file);
        }
#endif

        /// <summary>A NUL-terminated UTF-8 string owned by the library, as a string ("" for NULL).</summary>
        internal static unsafe string Utf8(IntPtr p)
        {
            if (p == IntPtr.Zero) return "";
            byte* b = (byte*)p;
            int n = 0;
            while (b[n] != 0) n++;
            return Encoding.UTF8.GetString(b, n);
        }

        /// <summary>UTF-8 bytes of s followed by a NUL.</summary>
        internal static byte[] Utf8Z(string s)
        {
            if (s == null) throw new ArgumentNullException("s");
            int n = Encoding.UTF8.GetByteCount(s);
            byte[] b = new byte[n + 1];
            Encoding.UTF8.GetBytes(s, 0, s.Length, b, 0);
            return b;
        }

        /// <summary>Copies a string into one unmanaged block as NUL-terminated UTF-8 (free with
        /// Marshal.FreeHGlobal).</summary>
        internal static IntPtr AllocUtf8Z(string s)
        {
            byte[] b = Utf8Z(s);
            IntPtr p = Marshal.AllocHGlobal(b.Length);
            Marshal.Copy(b, 0, p, b.Length);
            return p;
        }
    }

    /// <summary>Library log levels (ZF_LOG_*).</summary>
    public enum LogLevel
    {
        Debug = 0,
        Info = 1,
        Warn = 2,
        Error = 3,
        None = 4,
    }

    /// <summary>Compute devices (ZF_DEVICE_*).</summary>
    public enum Device
    {
        Auto = 0,
        Cpu = 1,
        Cuda = 2,
    }
}

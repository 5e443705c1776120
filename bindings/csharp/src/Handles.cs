using System;
using System.Runtime.InteropServices;

namespace Zerfoo
{
    /// <summary>Owns a zf_model*. Released by Dispose or, if leaked, by its finalizer; never
    /// while a call is using it (SafeHandle counts P/Invoke uses) nor while a session made from it
    /// is alive (each <see cref="SessionHandle"/> holds a reference).</summary>
    internal sealed class ModelHandle : SafeHandle
    {
        /// <summary>Live native models (for the leak tests).</summary>
        internal static int LiveCount;

        ModelHandle() : base(IntPtr.Zero, true) { }

        internal static ModelHandle FromNative(IntPtr p)
        {
            var h = new ModelHandle();
            h.SetHandle(p);
            System.Threading.Interlocked.Increment(ref LiveCount);
            return h;
        }

        public override bool IsInvalid { get { return handle == IntPtr.Zero; } }

        protected override bool ReleaseHandle()
        {
            NativeMethods.zf_model_free(handle);
            System.Threading.Interlocked.Decrement(ref LiveCount);
            return true;
        }
    }

    /// <summary>Owns a zf_session*. Holds a counted reference to its model's handle (until the
    /// library keeps a model alive for its sessions itself), so the model is freed only after
    /// its last session, whatever order Dispose calls and finalizers run in.</summary>
    internal sealed class SessionHandle : SafeHandle
    {
        internal static int LiveCount;

        ModelHandle model;

        SessionHandle() : base(IntPtr.Zero, true) { }

        /// <summary>Creates the session with a reference on the model taken first, so the model
        /// cannot be released between the create and the handle owning the pointer.</summary>
        internal static SessionHandle Create(ModelHandle model, ref zf_session_params p)
        {
            bool added = false;
            var h = new SessionHandle();
            try
            {
                model.DangerousAddRef(ref added);  // throws ObjectDisposedException if disposed
                IntPtr s;
                int st = NativeMethods.zf_session_create(model, ref p, out s);
                ZerfooException.Check(st, "zf_session_create");
                h.model = model;
                h.SetHandle(s);
                System.Threading.Interlocked.Increment(ref LiveCount);
                return h;
            }
            catch
            {
                if (added && h.model == null) model.DangerousRelease();
                throw;
            }
        }

        public override bool IsInvalid { get { return handle == IntPtr.Zero; } }

        protected override bool ReleaseHandle()
        {
            NativeMethods.zf_session_free(handle);
            System.Threading.Interlocked.Decrement(ref LiveCount);
            ModelHandle m = model;
            model = null;
            if (m != null) m.DangerousRelease();
            return true;
        }
    }
}

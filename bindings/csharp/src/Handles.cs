using System;
using System.Runtime.InteropServices;

namespace Zerfoo
{
    /// <summary>Owns a zf_model*. Released by Dispose or, if leaked, by its finalizer; never
    /// while a call is using it (SafeHandle counts P/Invoke uses) nor while a session made from it
    /// is alive (each <see cref="SessionHandle"/> holds a reference).</summary>
    internal sealed class ModelHandle : NativeHandle
    {
        /// <summary>Live native models (for the leak tests).</summary>
        internal static int LiveCount;

        ModelHandle() { }

        internal static ModelHandle FromNative(IntPtr p)
        {
            var h = new ModelHandle();
            h.SetHandle(p);
            System.Threading.Interlocked.Increment(ref LiveCount);
            return h;
        }

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
    internal sealed class SessionHandle : NativeHandle
    {
        internal static int LiveCount;

        ModelHandle model;

        SessionHandle() { }

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

        protected override bool ReleaseHandle()
        {
            NativeMethods.zf_session_free(handle);
            System.Threading.Interlocked.Decrement(ref LiveCount);
            ReleaseReference(ref model);
            return true;
        }
    }

    /// <summary>Owns a zf_turn* (a chat turn, since 0.5). Holds a counted reference on its
    /// session's handle, so the native session outlives the turn whatever order Dispose calls and
    /// finalizers run in; zf_chat_turn_free stops a running turn (the session keeps what was
    /// generated) and may run on any thread, the finalizer's included.</summary>
    internal sealed class TurnHandle : NativeHandle
    {
        internal static int LiveCount;

        SessionHandle session;

        TurnHandle() { }

        /// <summary>Takes the reference on the session before the native call that creates the
        /// turn, so the session cannot be released in between; <see cref="Adopt"/> then owns
        /// the pointer (or <see cref="Abandon"/> gives the reference back when there is none).</summary>
        internal static TurnHandle Reserve(SessionHandle session)
        {
            bool added = false;
            session.DangerousAddRef(ref added);  // throws ObjectDisposedException if disposed
            return new TurnHandle { session = session };
        }

        internal void Adopt(IntPtr turn)
        {
            SetHandle(turn);
            System.Threading.Interlocked.Increment(ref LiveCount);
        }

        /// <summary>Frees the turn, or gives the session reference back if no turn was adopted.</summary>
        internal void Finish()
        {
            if (IsInvalid) Abandon();
            else Dispose();
        }

        internal void Abandon()
        {
            ReleaseReference(ref session);
            SetHandleAsInvalid();
            GC.SuppressFinalize(this);
        }

        protected override bool ReleaseHandle()
        {
            NativeMethods.zf_chat_turn_free(handle);
            System.Threading.Interlocked.Decrement(ref LiveCount);
            ReleaseReference(ref session);
            return true;
        }
    }

    /// <summary>Owns a zf_lora_adapter*. The library keeps the adapter's model alive for it, and
    /// a session applying it keeps it alive, so it is freed in any order.</summary>
    internal sealed class SpeechHandle : NativeHandle
    {
        SpeechHandle() { }

        internal static SpeechHandle FromNative(IntPtr p)
        {
            var h = new SpeechHandle();
            h.SetHandle(p);
            return h;
        }

        protected override bool ReleaseHandle()
        {
            NativeMethods.zf_speech_free(handle);
            return true;
        }
    }

    /// <summary>Owns a zf_mmproj*. The library keeps the projector's model alive for it.</summary>
    internal sealed class MmprojHandle : NativeHandle
    {
        MmprojHandle() { }

        internal static MmprojHandle FromNative(IntPtr p)
        {
            var h = new MmprojHandle();
            h.SetHandle(p);
            return h;
        }

        protected override bool ReleaseHandle()
        {
            NativeMethods.zf_mmproj_free(handle);
            return true;
        }
    }

    internal sealed class LoraHandle : NativeHandle
    {
        internal static int LiveCount;

        LoraHandle() { }

        internal static LoraHandle FromNative(IntPtr p)
        {
            var h = new LoraHandle();
            h.SetHandle(p);
            System.Threading.Interlocked.Increment(ref LiveCount);
            return h;
        }

        protected override bool ReleaseHandle()
        {
            NativeMethods.zf_lora_free(handle);
            System.Threading.Interlocked.Decrement(ref LiveCount);
            return true;
        }
    }

    /// <summary>Owns a native pointer (zero: none). A session's handle and a turn's hold a counted
    /// reference on the handle they depend on (the model's, the session's), given back with
    /// <see cref="ReleaseReference"/>.</summary>
    internal abstract class NativeHandle : SafeHandle
    {
        protected NativeHandle() : base(IntPtr.Zero, true) { }

        public override bool IsInvalid { get { return handle == IntPtr.Zero; } }

        /// <summary>Gives back the reference held in <paramref name="owner"/>, if any, and clears it.</summary>
        protected static void ReleaseReference<T>(ref T owner) where T : SafeHandle
        {
            T o = owner;
            owner = null;
            if (o != null) o.DangerousRelease();
        }
    }
}

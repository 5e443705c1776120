// Chat turns (zf_chat_turn*, since 0.5): Session.ChatTurn runs a whole assistant turn through
// zf_chat_turn and its callback; Session.StreamChatTurn is an IEnumerable over the pull API
// (zf_chat_turn_begin / zf_chat_turn_next), so no producer thread is needed; Model.ChatTurnPrompt
// is the prompt such a turn would evaluate (zf_chat_turn_prompt).
using System;
using System.Collections;
using System.Collections.Generic;
using System.Runtime.InteropServices;
using System.Text;
using System.Threading;

namespace Zerfoo
{
    public sealed partial class Session
    {
        /// <summary>Runs one assistant turn of <paramref name="request"/> (zf_chat_turn): renders
        /// the conversation with the chat template, keeps what this session already holds of that
        /// prompt (its common prefix; the rest of the KV cache is dropped), generates under the
        /// request's tool choice / response format / constraint, and parses the text into content,
        /// reasoning and tool calls as it arrives. <paramref name="onEvent"/> (may be null) gets
        /// each event on this thread; an exception thrown by it stops the turn and is rethrown here.</summary>
        /// <exception cref="ZerfooException">InvalidArgument (malformed request JSON, a field of the
        /// wrong type or value, a tool_choice naming no offered tool, an invalid schema or
        /// constraint: the message names it), InvalidUtf8, Template, NotFound (no such
        /// TemplateName), ContextFull, Unsupported.</exception>
        /// <exception cref="OperationCanceledException">The token was cancelled (the turn stops at
        /// the next token; the session keeps what was generated).</exception>
        /// <exception cref="InvalidOperationException">Another call is using the session.</exception>
        public ChatTurnResult ChatTurn(ChatRequest request, Action<TurnEvent> onEvent = null,
                                       CancellationToken cancellationToken = default(CancellationToken))
        {
            if (request == null) throw new ArgumentNullException("request");
            Acquire();
            try
            {
                cancellationToken.ThrowIfCancellationRequested();
                using (NativeTurnParams p = NativeTurnParams.From(request))
                {
                    var sink = new TurnSink(onEvent);
                    GCHandle gch = GCHandle.Alloc(sink);
                    TurnHandle turn = TurnHandle.Reserve(handle);
                    try
                    {
                        IntPtr raw;
                        int st;
                        using (cancellationToken.Register(ForwardCancel))
                        {
                            EnterNative();
                            try
                            {
                                st = NativeMethods.zf_chat_turn(handle, ref p.Value, TurnDelegate, GCHandle.ToIntPtr(gch), out raw);
                                if (raw != IntPtr.Zero) turn.Adopt(raw);
                                if (st != 0) ZerfooException.Check(st, "zf_chat_turn");  // same thread, no call between
                            }
                            finally
                            {
                                LeaveNative();
                            }
                        }
                        if (sink.Error != null)
                            System.Runtime.ExceptionServices.ExceptionDispatchInfo.Capture(sink.Error).Throw();
                        if (sink.Done == null) throw new ZerfooException(Status.Internal, "zf_chat_turn: the turn ended without a done event");
                        if (sink.Done.StopReason == StopReason.Cancelled && cancellationToken.IsCancellationRequested)
                            throw new OperationCanceledException(cancellationToken);
                        return new ChatTurnResult
                        {
                            Message = ReadTurnMessage(turn),
                            FinishReason = sink.Done.FinishReason,
                            StopReason = sink.Done.StopReason,
                            Usage = sink.Done.Usage,
                        };
                    }
                    finally
                    {
                        turn.Finish();
                        gch.Free();
                    }
                }
            }
            finally
            {
                Release();
            }
        }

        /// <summary>Streams one assistant turn of <paramref name="request"/> event by event:
        /// <c>foreach (TurnEvent e in session.StreamChatTurn(request, token))</c>, over
        /// zf_chat_turn_begin / zf_chat_turn_next on the loop's own thread (each MoveNext generates
        /// until the next event). The last event is <see cref="TurnDone"/>; after the loop
        /// <see cref="ChatTurnStream.Result"/> holds the assistant message. Breaking out of the loop
        /// (or disposing the enumerator) stops the turn and leaves the session ready for the next
        /// call, keeping what was generated; cancelling the token does the same and makes the loop
        /// throw OperationCanceledException. The session is busy from the first MoveNext until
        /// the turn is done or the enumerator is disposed. Errors as <see cref="ChatTurn"/>, thrown
        /// by the first MoveNext.</summary>
        public ChatTurnStream StreamChatTurn(ChatRequest request,
                                             CancellationToken cancellationToken = default(CancellationToken))
        {
            if (request == null) throw new ArgumentNullException("request");
            return new ChatTurnStream(this, request, cancellationToken);
        }

        /// <summary>Marks a native call that zf_session_cancel may interrupt (see ForwardCancel),
        /// forwarding a cancel that came while no call ran.</summary>
        internal void EnterNative()
        {
            lock (cancelGate)
            {
                inNative = 1;
                if (cancelRequested) NativeMethods.zf_session_cancel(handle);
            }
        }

        internal void LeaveNative()
        {
            lock (cancelGate) inNative = 0;
        }

        /// <summary>zf_chat_turn_message: the assistant message so far (all of it once done).</summary>
        internal static AssistantMessage ReadTurnMessage(TurnHandle turn)
        {
            byte[] buf = new byte[1024];
            for (;;)
            {
                UIntPtr needed;
                int st = NativeMethods.zf_chat_turn_message(turn, buf, (UIntPtr)buf.Length, out needed);
                if (st == (int)Status.BufferTooSmall) { buf = new byte[(int)needed]; continue; }
                ZerfooException.Check(st, "zf_chat_turn_message");
                return Model.ParseMessage(Encoding.UTF8.GetString(buf, 0, (int)needed - 1));
            }
        }

        // One delegate for every turn (alive as long as the process); the turn's state travels
        // in user_data as a GCHandle.
        static readonly zf_turn_cb TurnDelegate = TurnTrampoline;

        [MonoPInvokeCallback(typeof(zf_turn_cb))]
        static unsafe int TurnTrampoline(IntPtr userData, IntPtr nativeEvent)
        {
            var sink = (TurnSink)GCHandle.FromIntPtr(userData).Target;
            try
            {
                // The library says how much of the struct it wrote; the rest stays zero.
                var e = new zf_turn_event();
                var src = (zf_turn_event*)nativeEvent;
                long n = Math.Min((long)src->struct_size, (long)sizeof(zf_turn_event));
                Buffer.MemoryCopy(src, &e, sizeof(zf_turn_event), n);
                TurnEvent te = TurnEvent.FromNative(ref e);
                if (te == null) return 0;  // a kind newer than this binding
                var done = te as TurnDone;
                if (done != null) sink.Done = done;
                if (sink.OnEvent != null) sink.OnEvent(te);
                return 0;
            }
            catch (Exception x)
            {
                sink.Error = x;  // never unwind into native code; rethrown after zf_chat_turn
                return 1;
            }
        }

        sealed class TurnSink
        {
            internal readonly Action<TurnEvent> OnEvent;
            internal TurnDone Done;
            internal Exception Error;

            internal TurnSink(Action<TurnEvent> onEvent) { OnEvent = onEvent; }
        }
    }

    public sealed partial class Model
    {
        /// <summary>The prompt a <see cref="Session.ChatTurn"/> of <paramref name="request"/> would
        /// evaluate (zf_chat_turn_prompt): its messages, tools and documents rendered with the
        /// template exactly as the turn renders them, the generation prompt added (a named tool
        /// choice shows only that tool). Nothing is evaluated. The request's Template, TemplateName
        /// and Now apply; its Generate options are only checked. For counting a request's tokens:
        /// <c>Tokenize(prompt, TokenizeFlags.AddSpecial | TokenizeFlags.ParseSpecial)</c>.
        /// Thread-safe.</summary>
        /// <exception cref="ZerfooException">As <see cref="Session.ChatTurn"/>'s request and
        /// template errors: InvalidArgument (the message names the field), InvalidUtf8, Template,
        /// NotFound (no such TemplateName).</exception>
        public string ChatTurnPrompt(ChatRequest request)
        {
            if (request == null) throw new ArgumentNullException("request");
            using (NativeTurnParams p = NativeTurnParams.From(request))
            {
                byte[] buf = new byte[1024];
                for (;;)
                {
                    UIntPtr needed;
                    int st = NativeMethods.zf_chat_turn_prompt(handle, ref p.Value, buf, (UIntPtr)buf.Length, out needed);
                    if (st == (int)Status.BufferTooSmall) { buf = new byte[(int)needed]; continue; }
                    ZerfooException.Check(st, "zf_chat_turn_prompt");
                    return Encoding.UTF8.GetString(buf, 0, (int)needed - 1);
                }
            }
        }
    }

    /// <summary>The events of one chat turn as an <see cref="IEnumerable{T}"/> (from
    /// <see cref="Session.StreamChatTurn"/>). Enumerate it once.</summary>
    public sealed class ChatTurnStream : IEnumerable<TurnEvent>
    {
        readonly Session session;
        readonly ChatRequest request;
        readonly CancellationToken token;
        int started;
        Enumerator enumerator;

        internal ChatTurnStream(Session session, ChatRequest request, CancellationToken token)
        {
            this.session = session;
            this.request = request;
            this.token = token;
        }

        /// <summary>After the loop: the assistant message and how the turn ended (after a break or
        /// a cancel: the message so far, <see cref="ChatTurnResult.Usage"/> null); null before, and
        /// after a failure (which the loop threw).</summary>
        public ChatTurnResult Result { get { return enumerator == null ? null : enumerator.Result; } }

        public IEnumerator<TurnEvent> GetEnumerator()
        {
            if (Interlocked.Exchange(ref started, 1) != 0)
                throw new InvalidOperationException("a ChatTurnStream can be enumerated only once");
            enumerator = new Enumerator(session, request, token);
            return enumerator;
        }

        IEnumerator IEnumerable.GetEnumerator() { return GetEnumerator(); }

        /// <summary>Enumerators stopped by their finalizer (for the tests).</summary>
        internal static int FinalizedEnumerators;

        /// <summary>Owns the session from the first MoveNext until the turn is done or stopped;
        /// an abandoned enumerator (no Dispose) is stopped by its finalizer.</summary>
        sealed class Enumerator : IEnumerator<TurnEvent>
        {
            readonly Session session;
            readonly ChatRequest request;
            readonly CancellationToken token;
            CancellationTokenRegistration registration;
            TurnHandle turn;        // non-null from a successful begin on
            bool finished;          // the session is released
            TurnEvent current;
            internal volatile ChatTurnResult Result;

            internal Enumerator(Session session, ChatRequest request, CancellationToken token)
            {
                this.session = session;
                this.request = request;
                this.token = token;
            }

            public TurnEvent Current { get { return current; } }
            object IEnumerator.Current { get { return current; } }

            public bool MoveNext()
            {
                if (finished) return false;
                if (turn == null) Begin();
                for (;;)
                {
                    if (token.IsCancellationRequested)
                    {
                        Stop(StopReason.Cancelled);
                        throw new OperationCanceledException(token);
                    }
                    var e = new zf_turn_event();
                    e.struct_size = (uint)Marshal.SizeOf(typeof(zf_turn_event));
                    TurnEvent te;
                    try
                    {
                        session.EnterNative();
                        try
                        {
                            int st = NativeMethods.zf_chat_turn_next(turn, ref e);
                            if (st != 0) ZerfooException.Check(st, "zf_chat_turn_next");
                        }
                        finally
                        {
                            session.LeaveNative();
                        }
                        te = TurnEvent.FromNative(ref e);  // copied out before the next call
                    }
                    catch
                    {
                        Finish();
                        throw;
                    }
                    if (te == null) continue;  // a kind newer than this binding
                    var done = te as TurnDone;
                    if (done != null)
                    {
                        try
                        {
                            Result = new ChatTurnResult
                            {
                                Message = Session.ReadTurnMessage(turn),
                                FinishReason = done.FinishReason,
                                StopReason = done.StopReason,
                                Usage = done.Usage,
                            };
                        }
                        finally
                        {
                            Finish();
                        }
                        if (done.StopReason == StopReason.Cancelled && token.IsCancellationRequested)
                            throw new OperationCanceledException(token);
                    }
                    current = te;
                    return true;
                }
            }

            void Begin()
            {
                token.ThrowIfCancellationRequested();
                session.Acquire();  // throws if the session is busy: nothing started yet
                try
                {
                    registration = token.Register(session.ForwardCancel);  // interrupts a prefill too
                    using (NativeTurnParams p = NativeTurnParams.From(request))
                    {
                        TurnHandle t = TurnHandle.Reserve(session.Handle);
                        IntPtr raw = IntPtr.Zero;
                        try
                        {
                            session.EnterNative();
                            try
                            {
                                int st = NativeMethods.zf_chat_turn_begin(session.Handle, ref p.Value, out raw);
                                if (st != 0) ZerfooException.Check(st, "zf_chat_turn_begin");
                            }
                            finally
                            {
                                session.LeaveNative();
                            }
                        }
                        catch
                        {
                            t.Abandon();
                            throw;
                        }
                        t.Adopt(raw);
                        turn = t;
                    }
                }
                catch
                {
                    registration.Dispose();
                    finished = true;
                    session.Release();
                    throw;
                }
            }

            /// <summary>Leaves a running turn: the message so far becomes the result.</summary>
            void Stop(StopReason why)
            {
                if (finished || turn == null) return;
                try
                {
                    Result = new ChatTurnResult
                    {
                        Message = Session.ReadTurnMessage(turn),
                        FinishReason = FinishReason.Stop,
                        StopReason = why,
                    };
                }
                finally
                {
                    Finish();
                }
            }

            /// <summary>Frees the turn (zf_chat_turn_free stops it; the session keeps what was
            /// generated) and releases the session.</summary>
            void Finish()
            {
                if (finished) return;
                finished = true;
                registration.Dispose();
                if (turn != null) turn.Dispose();
                session.Release();
            }

            public void Reset() { throw new NotSupportedException(); }

            public void Dispose()
            {
                if (!finished && turn != null) Stop(StopReason.Callback);
                GC.SuppressFinalize(this);
            }

            ~Enumerator()
            {
                Interlocked.Increment(ref FinalizedEnumerators);
                if (finished || turn == null) return;
                finished = true;
                registration.Dispose();
                turn.Dispose();  // zf_chat_turn_free may run on any thread
                session.Release();
            }
        }
    }

    /// <summary>A <see cref="ChatRequest"/> as zf_turn_params, with the unmanaged strings and
    /// generate params it points to (freed together; borrowed by the library for the begin only).</summary>
    internal sealed class NativeTurnParams : IDisposable
    {
        internal zf_turn_params Value;
        readonly UnmanagedAllocations owned = new UnmanagedAllocations();
        NativeGenerateParams generate;

        internal static NativeTurnParams From(ChatRequest r)
        {
            string json = r.ToJson();
            var n = new NativeTurnParams();
            try
            {
                ZerfooException.Check(NativeMethods.zf_turn_params_init(ref n.Value,
                    (UIntPtr)Marshal.SizeOf(typeof(zf_turn_params))), "zf_turn_params_init");
                n.Value.request_json = n.owned.Own(Library.AllocUtf8Z(json));
                if (r.TemplateName != null) n.Value.template_name = n.owned.Own(Library.AllocUtf8Z(r.TemplateName));
                if (r.Template != null) n.Value.template_text = n.owned.Own(Library.AllocUtf8Z(r.Template));
                if (r.Generate != null)
                {
                    n.generate = NativeGenerateParams.From(r.Generate);
                    n.Value.generate = n.generate.ToUnmanaged();
                }
                if (r.Now.HasValue)
                {
                    n.Value.flags |= 0x2u;  // ZF_CHAT_FIXED_TIME
                    n.Value.time_unix = r.Now.Value.ToUnixTimeSeconds();
                }
                if (r.Mmproj != null)
                {
                    // Held (a reference on the safe handle) until these params are disposed.
                    bool added = false;
                    r.Mmproj.Handle.DangerousAddRef(ref added);
                    n.mmproj = r.Mmproj.Handle;
                    n.Value.mmproj = r.Mmproj.Handle.DangerousGetHandle();
                }
                return n;
            }
            catch
            {
                n.Dispose();
                throw;
            }
        }

        public void Dispose()
        {
            owned.Dispose();
            if (generate != null) generate.Dispose();
            generate = null;
            if (mmproj != null) mmproj.DangerousRelease();
            mmproj = null;
        }

        MmprojHandle mmproj;
    }
}

using System;
using System.Collections;
using System.Collections.Concurrent;
using System.Collections.Generic;
using System.Runtime.ExceptionServices;
using System.Text;
using System.Threading;

namespace Zerfoo
{
    /// <summary>The pieces of one generation as an <see cref="IEnumerable{T}"/> of strings
    /// (from <see cref="Session.Stream"/>). Enumerate it once.</summary>
    /// <remarks>The C ABI streams by callback (zf_generate pushes pieces), so a producer thread
    /// runs zf_generate and hands pieces to the consumer through a small bounded queue: the
    /// generation runs at most <see cref="QueueCapacity"/> pieces ahead of the loop, and a loop
    /// that stops consuming pauses it. Stopping (break/Dispose) makes the next callback return
    /// nonzero; a cancelled token also calls zf_session_cancel, which interrupts a prefill too.
    /// Everything about the push-to-pull adaptation lives in this file, to be replaced by a
    /// direct loop over a pull-style ABI when the library has one.</remarks>
    public sealed class TextStream : IEnumerable<string>
    {
        /// <summary>Pieces the producer may run ahead of the consumer.</summary>
        public const int QueueCapacity = 8;

        readonly Session session;
        readonly byte[] prompt;
        readonly GenerateOptions options;
        readonly CancellationToken token;
        int started;
        Pump pump;

        internal TextStream(Session session, byte[] prompt, GenerateOptions options, CancellationToken token)
        {
            this.session = session;
            this.prompt = prompt;
            this.options = options;
            this.token = token;
        }

        /// <summary>Stop reason, token counts and timings once the generation has ended (after
        /// the loop, including after a break); null before, and after a failure (which the loop
        /// threw). Text is the full text generated, including pieces the loop did not consume.</summary>
        public GenerateResult Result { get { return pump == null ? null : pump.Result; } }

        /// <summary>Pieces the generation had produced when a cancel (token or break) was
        /// requested (for tests of the one-token bound); -1 if none was.</summary>
        internal int ProducedAtStop { get { return pump == null ? -1 : pump.ProducedAtStop; } }

        public IEnumerator<string> GetEnumerator()
        {
            if (Interlocked.Exchange(ref started, 1) != 0)
                throw new InvalidOperationException("a TextStream can be enumerated only once");
            pump = new Pump(session, prompt, options, token);
            return new Enumerator(pump);
        }

        IEnumerator IEnumerable.GetEnumerator() { return GetEnumerator(); }

        /// <summary>Enumerators stopped by their finalizer (for the tests).</summary>
        internal static int FinalizedEnumerators;

        /// <summary>Stops the generation and waits for the producer, as the enumerator's Dispose
        /// would (for the tests).</summary>
        internal void StopForTests()
        {
            Pump p = pump;
            if (p != null) p.Stop(true);
        }

        /// <summary>The consumer's side. Holds the pump, never the reverse, so an abandoned
        /// enumerator (no Dispose) is finalized and its finalizer stops the generation.</summary>
        sealed class Enumerator : IEnumerator<string>
        {
            Pump pump;
            string current;

            internal Enumerator(Pump pump) { this.pump = pump; }

            public string Current { get { return current; } }
            object IEnumerator.Current { get { return current; } }

            public bool MoveNext()
            {
                if (pump == null) return false;
                return pump.Next(out current);
            }

            public void Reset() { throw new NotSupportedException(); }

            public void Dispose()
            {
                Pump p = pump;
                pump = null;
                if (p != null) p.Stop(true);
                GC.SuppressFinalize(this);
            }

            ~Enumerator()
            {
                Interlocked.Increment(ref FinalizedEnumerators);
                Pump p = pump;
                if (p != null) p.Stop(false);  // must not block the finalizer thread
            }
        }

        /// <summary>Producer thread + bounded queue. Owns the session from Start to the end of
        /// the producer thread.</summary>
        sealed class Pump : PieceSink
        {
            readonly Session session;
            readonly byte[] prompt;
            readonly GenerateOptions options;
            readonly CancellationToken token;
            readonly BlockingCollection<string> queue = new BlockingCollection<string>(QueueCapacity);
            readonly CancellationTokenSource stop = new CancellationTokenSource();
            readonly ManualResetEventSlim done = new ManualResetEventSlim(false);
            CancellationTokenRegistration registration;
            Thread thread;
            Exception failure;
            int produced;
            internal int ProducedAtStop = -1;
            internal volatile GenerateResult Result;

            internal Pump(Session session, byte[] prompt, GenerateOptions options, CancellationToken token)
            {
                this.session = session;
                this.prompt = prompt;
                this.options = options;
                this.token = token;
            }

            void Start()
            {
                token.ThrowIfCancellationRequested();
                session.Acquire();  // throws if the session is busy: nothing started yet
                try
                {
                    registration = token.Register(OnTokenCancelled);
                    thread = new Thread(Produce) { IsBackground = true, Name = "zerfoo stream" };
                    thread.Start();
                }
                catch
                {
                    registration.Dispose();
                    session.Release();
                    throw;
                }
            }

            void Produce()
            {
                GenerateResult r = null;
                try
                {
                    r = session.GenerateCore(prompt, options, this);
                }
                catch (Exception e)
                {
                    failure = e;
                }
                finally
                {
                    registration.Dispose();
                    session.Release();
                    Result = r;  // published after the release: a non-null Result means the session is free
                    done.Set();
                    queue.CompleteAdding();
                }
            }

            // Producer thread, inside the zf_generate callback.
            internal override bool OnPiece(ReadOnlySpan<byte> piece, int token)
            {
                base.OnPiece(piece, token);  // Result.Text stays complete even if the loop stops
                Interlocked.Increment(ref produced);  // callbacks so far (the one-token bound)
                if (stop.IsCancellationRequested) return false;
                try
                {
                    queue.Add(Encoding.UTF8.GetString(piece), stop.Token);
                }
                catch (OperationCanceledException)
                {
                    return false;
                }
                return !stop.IsCancellationRequested;
            }

            void OnTokenCancelled()
            {
                stop.Cancel();              // the next callback returns nonzero, a blocked Add wakes
                // Read after the stop is visible: every later callback returns nonzero.
                Interlocked.CompareExchange(ref ProducedAtStop, Volatile.Read(ref produced), -1);
                session.ForwardCancel();    // stops a prefill too (only while zf_generate runs)
            }

            // Consumer thread.
            internal bool Next(out string piece)
            {
                if (thread == null) Start();
                piece = null;
                bool got = false;
                try
                {
                    if (!token.IsCancellationRequested) got = queue.TryTake(out piece, Timeout.Infinite, token);
                }
                catch (OperationCanceledException)
                {
                }
                if (got) return true;
                if (token.IsCancellationRequested)
                {
                    done.Wait();
                    throw new OperationCanceledException(token);
                }
                done.Wait();  // the queue completed: the producer has finished
                if (failure != null) ExceptionDispatchInfo.Capture(failure).Throw();
                return false;
            }

            // Consumer thread (Dispose, wait = true) or finalizer (wait = false).
            internal void Stop(bool wait)
            {
                if (thread == null) return;  // never started
                if (!done.IsSet)
                {
                    stop.Cancel();
                    Interlocked.CompareExchange(ref ProducedAtStop, Volatile.Read(ref produced), -1);
                    // Before the first piece the generation may still be in the prompt's prefill,
                    // which only zf_session_cancel interrupts.
                    if (Volatile.Read(ref produced) == 0) session.ForwardCancel();
                }
                if (wait) done.Wait();
            }
        }
    }
}

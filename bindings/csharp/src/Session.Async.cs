// .NET 5+ only (Zerfoo.csproj, net8.0); Mono's mcs never compiles this (CI cannot build it:
// no .NET SDK there). IAsyncEnumerable over the same TextStream as Session.Stream, and over
// ChatTurnStream as Session.StreamChatTurn.
#if NET5_0_OR_GREATER
using System.Collections.Generic;
using System.Runtime.CompilerServices;
using System.Threading;
using System.Threading.Tasks;

namespace Zerfoo
{
    public sealed partial class Session
    {
        /// <summary>The async form of <see cref="Stream"/>: <c>await foreach (string piece in
        /// session.StreamAsync(prompt).WithCancellation(token))</c>. Each wait for a piece runs on
        /// the thread pool (the ABI streams by callback on a producer thread); leaving the loop
        /// stops the generation, and cancelling the token throws OperationCanceledException
        /// within one token.</summary>
        public async IAsyncEnumerable<string> StreamAsync(string prompt, GenerateOptions options = null,
            [EnumeratorCancellation] CancellationToken cancellationToken = default)
        {
            IEnumerator<string> e = Stream(prompt, options, cancellationToken).GetEnumerator();
            try
            {
                while (await Task.Run(() => e.MoveNext()).ConfigureAwait(false))
                    yield return e.Current;
            }
            finally
            {
                await Task.Run(() => e.Dispose()).ConfigureAwait(false);  // waits for the producer
            }
        }

        /// <summary>The async form of <see cref="StreamChatTurn"/>: <c>await foreach (TurnEvent e in
        /// session.StreamChatTurnAsync(request).WithCancellation(token))</c>. Each step
        /// (zf_chat_turn_next, which generates until the next event) runs on the thread pool;
        /// leaving the loop stops the turn, and cancelling the token throws
        /// OperationCanceledException within one token.</summary>
        public async IAsyncEnumerable<TurnEvent> StreamChatTurnAsync(ChatRequest request,
            [EnumeratorCancellation] CancellationToken cancellationToken = default)
        {
            IEnumerator<TurnEvent> e = StreamChatTurn(request, cancellationToken).GetEnumerator();
            try
            {
                while (await Task.Run(() => e.MoveNext()).ConfigureAwait(false))
                    yield return e.Current;
            }
            finally
            {
                await Task.Run(() => e.Dispose()).ConfigureAwait(false);
            }
        }
    }
}
#endif

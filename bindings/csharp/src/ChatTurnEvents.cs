// The typed events of a chat turn (zf_turn_event) and its outcome, copied out of the library's
// borrowed event before the next call.
using System;
using System.Text;

namespace Zerfoo
{
    /// <summary>The kind of a <see cref="TurnEvent"/> (ZF_TURN_*).</summary>
    public enum TurnEventKind
    {
        Content = 1,
        Reasoning = 2,
        ToolCall = 3,
        ToolArguments = 4,
        Logprobs = 5,
        Done = 6,
    }

    /// <summary>Why a turn ended, in OpenAI's terms (ZF_FINISH_*).</summary>
    public enum FinishReason
    {
        /// <summary>"stop": the model ended the turn (or a stop string, or the caller).</summary>
        Stop = 0,
        /// <summary>"length": MaxTokens or the context ended it.</summary>
        Length = 1,
        /// <summary>"tool_calls": the turn ended with tool calls to run.</summary>
        ToolCalls = 2,
    }

    /// <summary>One event of a chat turn: <see cref="TurnContent"/>, <see cref="TurnReasoning"/>,
    /// <see cref="TurnToolCall"/>, <see cref="TurnToolArguments"/>, <see cref="TurnLogprobs"/> or
    /// <see cref="TurnDone"/> (switch on the type or on <see cref="Kind"/>). Concatenated per kind
    /// they are the turn's final message: the content texts its content, the reasoning texts its
    /// reasoning, each tool call's argument fragments its arguments.</summary>
    public abstract class TurnEvent
    {
        internal TurnEvent() { }

        public abstract TurnEventKind Kind { get; }

        /// <summary>With <see cref="GenerateOptions.Logprobs"/>: the log-probabilities of the
        /// tokens generated since the previous event that carried any; else empty.</summary>
        public TokenLogprobs[] Logprobs { get; internal set; }

        /// <summary>Copies the library's borrowed event; null for a kind newer than this binding.</summary>
        internal static unsafe TurnEvent FromNative(ref zf_turn_event e)
        {
            TurnEvent r;
            switch (e.kind)
            {
                case 1: r = new TurnContent(Text(ref e)); break;
                case 2: r = new TurnReasoning(Text(ref e)); break;
                case 3: r = new TurnToolCall(e.tool_index, Library.Utf8(e.tool_id) ?? "", Library.Utf8(e.tool_name) ?? ""); break;
                case 4: r = new TurnToolArguments(e.tool_index, Text(ref e)); break;
                case 5: r = new TurnLogprobs(); break;
                case 6:
                    r = new TurnDone((FinishReason)e.finish_reason, (StopReason)e.stop_reason, new TurnUsage
                    {
                        PromptTokens = e.n_prompt,
                        CachedTokens = e.n_cached,
                        GeneratedTokens = e.n_generated,
                        DraftedTokens = e.n_drafted,
                        AcceptedTokens = e.n_accepted,
                        PromptTime = TimeSpan.FromTicks((long)(e.prompt_ms * TimeSpan.TicksPerMillisecond)),
                        DecodeTime = TimeSpan.FromTicks((long)(e.decode_ms * TimeSpan.TicksPerMillisecond)),
                    });
                    break;
                default: return null;
            }
            r.Logprobs = CopyLogprobs(ref e);
            return r;
        }

        static unsafe string Text(ref zf_turn_event e)
        {
            int n = checked((int)(ulong)e.text_len);
            return n == 0 ? "" : Encoding.UTF8.GetString((byte*)e.text, n);
        }

        // n_logprobs entries, logprob_stride per token (the chosen one, then its alternatives),
        // as zf_session_logprobs lays them out.
        static unsafe TokenLogprobs[] CopyLogprobs(ref zf_turn_event e)
        {
            int total = checked((int)(ulong)e.n_logprobs), k = checked((int)(ulong)e.logprob_stride);
            if (e.logprobs == IntPtr.Zero || total == 0 || k == 0) return new TokenLogprobs[0];
            var src = (zf_token_logprob*)e.logprobs;
            var result = new TokenLogprobs[total / k];
            for (int t = 0; t < result.Length; t++)
            {
                var top = new TokenLogprob[k - 1];
                for (int j = 1; j < k; j++)
                    top[j - 1] = new TokenLogprob { Token = src[t * k + j].token, Logprob = src[t * k + j].logprob };
                result[t] = new TokenLogprobs { Token = src[t * k].token, Logprob = src[t * k].logprob, Top = top };
            }
            return result;
        }
    }

    /// <summary>More of the answer's content.</summary>
    public sealed class TurnContent : TurnEvent
    {
        internal TurnContent(string text) { Text = text; }
        public override TurnEventKind Kind { get { return TurnEventKind.Content; } }
        public string Text { get; private set; }
        public override string ToString() { return "Content " + Text; }
    }

    /// <summary>More of the reasoning (thinking) text.</summary>
    public sealed class TurnReasoning : TurnEvent
    {
        internal TurnReasoning(string text) { Text = text; }
        public override TurnEventKind Kind { get { return TurnEventKind.Reasoning; } }
        public string Text { get; private set; }
        public override string ToString() { return "Reasoning " + Text; }
    }

    /// <summary>Tool call <see cref="Index"/> begins; its arguments follow as
    /// <see cref="TurnToolArguments"/> fragments. Calls come in index order.</summary>
    public sealed class TurnToolCall : TurnEvent
    {
        internal TurnToolCall(int index, string id, string name) { Index = index; Id = id; Name = name; }
        public override TurnEventKind Kind { get { return TurnEventKind.ToolCall; } }
        /// <summary>0, 1, ... (the position in <see cref="AssistantMessage.ToolCalls"/>).</summary>
        public int Index { get; private set; }
        public string Id { get; private set; }
        /// <summary>The function's name.</summary>
        public string Name { get; private set; }
        public override string ToString() { return "ToolCall " + Index + " " + Id + " " + Name; }
    }

    /// <summary>More of call <see cref="Index"/>'s arguments (JSON text).</summary>
    public sealed class TurnToolArguments : TurnEvent
    {
        internal TurnToolArguments(int index, string text) { Index = index; Text = text; }
        public override TurnEventKind Kind { get { return TurnEventKind.ToolArguments; } }
        public int Index { get; private set; }
        public string Text { get; private set; }
        public override string ToString() { return "ToolArguments " + Index + " " + Text; }
    }

    /// <summary>Log-probabilities of tokens whose text is held back (a marker, or a call still
    /// arriving); only with <see cref="GenerateOptions.Logprobs"/>.</summary>
    public sealed class TurnLogprobs : TurnEvent
    {
        internal TurnLogprobs() { }
        public override TurnEventKind Kind { get { return TurnEventKind.Logprobs; } }
        public override string ToString() { return "Logprobs " + Logprobs.Length; }
    }

    /// <summary>The last event: why the turn ended and what it cost.</summary>
    public sealed class TurnDone : TurnEvent
    {
        internal TurnDone(FinishReason finish, StopReason stop, TurnUsage usage)
        {
            FinishReason = finish;
            StopReason = stop;
            Usage = usage;
        }
        public override TurnEventKind Kind { get { return TurnEventKind.Done; } }
        public FinishReason FinishReason { get; private set; }
        /// <summary>The generation's stop reason (Eos, MaxTokens, StopString, Callback, Cancelled, ContextFull).</summary>
        public StopReason StopReason { get; private set; }
        public TurnUsage Usage { get; private set; }
        public override string ToString() { return "Done " + FinishReason + " " + StopReason + " " + Usage; }
    }

    /// <summary>A turn's token counts and times.</summary>
    public sealed class TurnUsage
    {
        /// <summary>Tokens of the rendered prompt.</summary>
        public int PromptTokens { get; internal set; }
        /// <summary>Of those, not evaluated again: kept in the session from an earlier turn, or
        /// mapped from the model's prefix cache.</summary>
        public int CachedTokens { get; internal set; }
        public int GeneratedTokens { get; internal set; }
        public int DraftedTokens { get; internal set; }
        public int AcceptedTokens { get; internal set; }
        /// <summary>Rendering, tokenizing and evaluating the prompt.</summary>
        public TimeSpan PromptTime { get; internal set; }
        public TimeSpan DecodeTime { get; internal set; }

        public override string ToString()
        {
            return string.Format("prompt {0} (cached {1}), generated {2}", PromptTokens, CachedTokens, GeneratedTokens);
        }
    }

    /// <summary>A finished (or stopped) chat turn: the assistant message and how it ended.</summary>
    public sealed class ChatTurnResult
    {
        /// <summary>The assistant message (zf_chat_turn_message): content, reasoning, tool calls.
        /// Send it back as <see cref="ChatRequestMessage.From"/> in the next request.</summary>
        public AssistantMessage Message { get; internal set; }
        public FinishReason FinishReason { get; internal set; }
        public StopReason StopReason { get; internal set; }
        /// <summary>Null when the loop left the turn before its end (the message is then the
        /// message so far).</summary>
        public TurnUsage Usage { get; internal set; }
    }
}

using System;
using System.Collections.Generic;
using System.IO;
using System.Runtime.InteropServices;
using System.Text;
using System.Threading;

namespace Zerfoo
{
    /// <summary>A KV cache element type (ZF_KV_*; llama.cpp's -ctk / -ctv words).</summary>
    public enum KvType
    {
        /// <summary>32-bit floats.</summary>
        F32 = 0,
        /// <summary>16-bit floats (the default).</summary>
        F16 = 1,
        /// <summary>ggml's Q8_0 blocks, 8.5 bits per element (CPU engine; head sizes a multiple of 32).</summary>
        Q8_0 = 2,
        /// <summary>ggml's Q4_0 blocks, 4.5 bits per element (as Q8_0).</summary>
        Q4_0 = 3,
    }

    /// <summary>Options for <see cref="Model.CreateSession"/>; null keeps the library default.</summary>
    public sealed class SessionOptions
    {
        /// <summary>Context length in tokens (default 0 = min(training context, 4096)).</summary>
        public int? ContextSize { get; set; }
        /// <summary>CPU threads (default 0 = the model's default).</summary>
        public int? Threads { get; set; }
        /// <summary>KV cache in 32-bit floats instead of the default 16-bit.</summary>
        public bool KvF32 { get; set; }
        /// <summary>K's cache type, and V's unless <see cref="KvTypeV"/> is set (default F16;
        /// overrides <see cref="KvF32"/>).</summary>
        public KvType? KvTypeK { get; set; }
        /// <summary>V's cache type when it differs from K's (llama.cpp's -ctv).</summary>
        public KvType? KvTypeV { get; set; }
        /// <summary>Prefill with the fastest kernels instead of the exact ones
        /// (ZF_SESSION_FAST_PREFILL). By default a session evaluates a prompt so that every
        /// position's logits are bit for bit the same however the prompt arrives (in one call, in
        /// pieces, one token at a time, after a prefix copied from the model's prefix cache, batched
        /// with other sessions). With this set, prompts of 8 tokens or more use the multi-token
        /// kernels (faster prefill), whose results differ from the one-token path in the last bits;
        /// such a session neither reads nor fills the prefix cache
        /// (<see cref="ModelOptions.PrefixCacheMiB"/>).</summary>
        public bool FastPrefill { get; set; }
    }

    /// <summary>Options for one generation; null keeps the library's default
    /// (zf_generate_params_init: 256 tokens, temperature 0.8, top-k 40, top-p 0.95, min-p 0.05).</summary>
    public sealed class GenerateOptions
    {
        /// <summary>Tokens to generate at most (negative: until the context is full).</summary>
        public int? MaxTokens { get; set; }
        /// <summary>0 = greedy.</summary>
        public float? Temperature { get; set; }
        public int? TopK { get; set; }
        public float? TopP { get; set; }
        public float? MinP { get; set; }
        public float? RepeatPenalty { get; set; }
        public int? RepeatLastN { get; set; }
        /// <summary>RNG seed (default random).</summary>
        public ulong? Seed { get; set; }
        /// <summary>Stop strings; never emitted.</summary>
        public IList<string> Stop { get; set; }
        /// <summary>Don't add BOS/special tokens to the prompt.</summary>
        public bool NoSpecial { get; set; }
        /// <summary>Treat special-token text in the prompt as plain text.</summary>
        public bool NoParseSpecial { get; set; }
        /// <summary>Keep generating past EOS/EOT.</summary>
        public bool IgnoreEos { get; set; }
        /// <summary>Report each generated token's log-probability and this many most likely
        /// alternatives (0 = off, the default; at most <see cref="MaxLogprobs"/>), in
        /// <see cref="GenerateResult.Logprobs"/> and <see cref="Piece.Logprobs"/>. The values are
        /// the log-softmax of the model's raw logits (before penalties, temperature and the
        /// top-k/top-p/min-p filters).</summary>
        public int? Logprobs { get; set; }

        /// <summary>The most alternatives <see cref="Logprobs"/> may ask for (ZF_MAX_LOGPROBS).</summary>
        public const int MaxLogprobs = 20;

        /// <summary>Speculative decoding by prompt lookup (zf_generate_params.draft_max; 0 = off,
        /// the default; at most <see cref="MaxDraft"/>): at each step up to this many tokens are
        /// drafted from an earlier occurrence of the text's last tokens in the prompt and output
        /// and verified in one pass; the output is token for token the output without drafts. It
        /// pays off when the answer repeats the prompt (code edits, quotes, extraction). Ignored on
        /// batched models, fast-prefill sessions and the CUDA engine. See
        /// <see cref="GenerateResult.DraftedTokens"/> and <see cref="GenerateResult.AcceptedTokens"/>.</summary>
        public int? DraftMax { get; set; }

        /// <summary>No draft at a step when fewer tokens than this are found (draft_min; 0 = 1).</summary>
        public int? DraftMin { get; set; }

        /// <summary>The most tokens <see cref="DraftMax"/> may draft per step (ZF_MAX_DRAFT).</summary>
        public const int MaxDraft = 16;

        /// <summary>Constrained decoding (default null = none): the generated text is exactly a
        /// text the constraint accepts (see <see cref="Zerfoo.Constraint"/>). It covers this call
        /// only and is compiled before the prompt is evaluated: an invalid one throws
        /// <see cref="ZerfooException"/> with <see cref="Status.InvalidArgument"/> and the
        /// compiler's message (nothing evaluated); a library built without constraints throws
        /// <see cref="Status.Unsupported"/>. A complete text ends with <see cref="StopReason.Eos"/>;
        /// <see cref="StopReason.MaxTokens"/> can still cut it short, so check the stop reason
        /// before parsing.</summary>
        public Constraint Constraint { get; set; }

        /// <summary>A lazy constraint (zf_generate_params.constraint_trigger; default null): the
        /// output is free until this text first appears in it, and from where it starts the rest
        /// must match <see cref="Constraint"/> (a tool call opened in free text: see
        /// <see cref="Model.ChatToolGrammar"/>). Without a constraint it throws
        /// <see cref="Status.InvalidArgument"/>.</summary>
        public string ConstraintTrigger { get; set; }
    }

    /// <summary>The kind of a <see cref="Constraint"/> (ZF_CONSTRAINT_*).</summary>
    public enum ConstraintKind
    {
        /// <summary>No constraint (ZF_CONSTRAINT_NONE).</summary>
        None = 0,
        /// <summary>A JSON schema, llguidance's subset (ZF_CONSTRAINT_JSON_SCHEMA).</summary>
        JsonSchema = 1,
        /// <summary>A regular expression (Rust regex syntax) matching the whole output
        /// (ZF_CONSTRAINT_REGEX).</summary>
        Regex = 2,
        /// <summary>A non-empty JSON array of strings; the output is one of them
        /// (ZF_CONSTRAINT_CHOICE).</summary>
        Choice = 3,
        /// <summary>A Lark grammar, llguidance's dialect with a <c>start</c> rule; no GBNF
        /// (ZF_CONSTRAINT_LARK).</summary>
        Lark = 4,
    }

    /// <summary>A constraint on the generated text (zf_generate_params.constraint and
    /// constraint_kind; the library's doc/constraints.md): its kind and its text. Check one
    /// without generating with <see cref="Model.CheckConstraint(Constraint)"/>.</summary>
    public sealed class Constraint
    {
        /// <summary>A constraint of any kind; <paramref name="text"/> is given to the library as is
        /// (for <see cref="ConstraintKind.Choice"/>, a JSON array of strings).</summary>
        public Constraint(ConstraintKind kind, string text)
        {
            if (text == null) throw new ArgumentNullException("text");
            Kind = kind;
            Text = text;
        }

        public ConstraintKind Kind { get; private set; }
        public string Text { get; private set; }

        /// <summary>The output is JSON matching <paramref name="schema"/>.</summary>
        public static Constraint JsonSchema(string schema) { return new Constraint(ConstraintKind.JsonSchema, schema); }

        /// <summary>The whole output matches <paramref name="regex"/> (Rust regex syntax).</summary>
        public static Constraint Regex(string regex) { return new Constraint(ConstraintKind.Regex, regex); }

        /// <summary>The output is exactly one of <paramref name="choices"/> (none is
        /// InvalidArgument when used).</summary>
        public static Constraint Choice(params string[] choices)
        {
            if (choices == null) throw new ArgumentNullException("choices");
            var sb = new StringBuilder("[");
            for (int i = 0; i < choices.Length; i++)
            {
                if (choices[i] == null) throw new ArgumentNullException("choices", "a choice is null");
                if (i > 0) sb.Append(',');
                Json.AppendString(sb, choices[i]);
            }
            return new Constraint(ConstraintKind.Choice, sb.Append(']').ToString());
        }

        /// <summary>The output matches the Lark grammar <paramref name="grammar"/>.</summary>
        public static Constraint Lark(string grammar) { return new Constraint(ConstraintKind.Lark, grammar); }

        public override string ToString() { return Kind + ": " + Text; }
    }

    /// <summary>A token id and its natural-log probability.</summary>
    public struct TokenLogprob
    {
        public int Token { get; internal set; }
        /// <summary>ln p(token); negative infinity for a token the model rules out.</summary>
        public float Logprob { get; internal set; }
    }

    /// <summary>One generated token's log-probability and the most likely alternatives in
    /// descending order (ties to the lower id; the token itself is among them when it is that
    /// likely).</summary>
    public sealed class TokenLogprobs
    {
        public int Token { get; internal set; }
        public float Logprob { get; internal set; }
        public TokenLogprob[] Top { get; internal set; }
    }

    /// <summary>A piece of generated text (<see cref="Session.GeneratePieces"/>): the token that
    /// completed it and, with <see cref="GenerateOptions.Logprobs"/>, the log-probabilities of
    /// every token sampled since the previous piece (this piece's token last; a piece may complete
    /// several tokens, and no delivered token is left out). Empty when logprobs are off.</summary>
    public sealed class Piece
    {
        public string Text { get; internal set; }
        public int Token { get; internal set; }
        public TokenLogprobs[] Logprobs { get; internal set; }
    }

    /// <summary>Why a generation ended (ZF_STOP_*).</summary>
    public enum StopReason
    {
        Eos = 0,
        MaxTokens = 1,
        StopString = 2,
        /// <summary>The consumer stopped it (a break out of Stream, or the callback).</summary>
        Callback = 3,
        /// <summary>Cancelled through a CancellationToken or <see cref="Session.Cancel"/>.</summary>
        Cancelled = 4,
        ContextFull = 5,
    }

    /// <summary>The outcome of a generation.</summary>
    public sealed class GenerateResult
    {
        /// <summary>The generated text (the concatenation of the streamed pieces).</summary>
        public string Text { get; internal set; }
        /// <summary>For each piece, the id of the token that completed it (a token that only
        /// starts a multi-byte character has no piece of its own).</summary>
        public int[] Tokens { get; internal set; }
        public StopReason StopReason { get; internal set; }
        /// <summary>Prompt tokens evaluated by this call.</summary>
        public int PromptTokens { get; internal set; }
        /// <summary>Tokens sampled by this call.</summary>
        public int GeneratedTokens { get; internal set; }
        public TimeSpan PromptTime { get; internal set; }
        public TimeSpan DecodeTime { get; internal set; }
        /// <summary>With <see cref="GenerateOptions.Logprobs"/>: one entry per generated token whose
        /// text was delivered, in order; null when logprobs are off.</summary>
        public TokenLogprobs[] Logprobs { get; internal set; }
        /// <summary>Tokens drafted with <see cref="GenerateOptions.DraftMax"/> (0 without drafts).</summary>
        public int DraftedTokens { get; internal set; }
        /// <summary>Drafted tokens kept (each spared a decode step).</summary>
        public int AcceptedTokens { get; internal set; }

        /// <summary>Decode throughput (generated tokens per second of decode time).</summary>
        public double TokensPerSecond
        {
            get { return DecodeTime.TotalSeconds > 0 ? GeneratedTokens / DecodeTime.TotalSeconds : 0; }
        }
    }

    /// <summary>One conversation: KV cache and sampler state. Used by one thread at a time (it
    /// may move between threads): a second concurrent call throws InvalidOperationException
    /// instead of corrupting the state. <see cref="Cancel"/> is safe from any thread.</summary>
    public sealed partial class Session : IDisposable
    {
        readonly Model model;   // keeps the Model object (and, through the handle, the native model) alive
        readonly SessionHandle handle;
        int busy;               // 1 while a call owns the session
        int inNative;           // 1 while zf_generate runs (cancel is forwarded only then)
        bool cancelRequested;   // a cancel arrived during the current call (guarded by cancelGate)
        readonly object cancelGate = new object();

        internal Session(Model model, SessionHandle handle)
        {
            this.model = model;
            this.handle = handle;
        }

        /// <summary>The model this session was created from.</summary>
        public Model Model { get { return model; } }

        internal SessionHandle Handle { get { return handle; } }

        /// <summary>Tokens currently in the KV cache (throws InvalidOperationException while
        /// another call uses the session).</summary>
        public int TokensInContext
        {
            get
            {
                Acquire();  // the count changes while a generation runs: one call at a time here too
                try
                {
                    int n;
                    ZerfooException.Check(NativeMethods.zf_session_n_past(handle, out n), "zf_session_n_past");
                    return n;
                }
                finally
                {
                    Release();
                }
            }
        }

        /// <summary>Generates a continuation of <paramref name="prompt"/>; the KV cache carries
        /// over from the previous call until <see cref="Reset"/>. <paramref name="onPiece"/> (may
        /// be null) receives each piece of text as it is produced, on this thread; an exception
        /// thrown by it stops the generation and is rethrown here.</summary>
        /// <exception cref="OperationCanceledException">The token was cancelled (the generation
        /// stops at the next token boundary).</exception>
        /// <exception cref="ZerfooException">ContextFull (prompt longer than the free context),
        /// InvalidUtf8, InvalidArgument.</exception>
        /// <exception cref="InvalidOperationException">Another call is using the session.</exception>
        public GenerateResult Generate(string prompt, GenerateOptions options = null, Action<string> onPiece = null,
                                       CancellationToken cancellationToken = default(CancellationToken))
        {
            if (prompt == null) throw new ArgumentNullException("prompt");
            Acquire();
            try
            {
                cancellationToken.ThrowIfCancellationRequested();
                var sink = new CollectingSink(onPiece);
                GenerateResult r;
                using (cancellationToken.Register(ForwardCancel))
                {
                    r = GenerateCore(Encoding.UTF8.GetBytes(prompt), options, sink);
                }
                if (r.StopReason == StopReason.Cancelled && cancellationToken.IsCancellationRequested)
                    throw new OperationCanceledException(cancellationToken);
                return r;
            }
            finally
            {
                Release();
            }
        }

        /// <summary>Like <see cref="Generate"/>, passing each piece to <paramref name="onPiece"/>
        /// with its token and (with <see cref="GenerateOptions.Logprobs"/>) the log-probabilities
        /// of the tokens it completes.</summary>
        public GenerateResult GeneratePieces(string prompt, GenerateOptions options, Action<Piece> onPiece,
                                             CancellationToken cancellationToken = default(CancellationToken))
        {
            if (prompt == null) throw new ArgumentNullException("prompt");
            if (onPiece == null) throw new ArgumentNullException("onPiece");
            Acquire();
            try
            {
                cancellationToken.ThrowIfCancellationRequested();
                var sink = new PieceCallbackSink(onPiece);
                GenerateResult r;
                using (cancellationToken.Register(ForwardCancel))
                {
                    r = GenerateCore(Encoding.UTF8.GetBytes(prompt), options, sink);
                }
                if (r.StopReason == StopReason.Cancelled && cancellationToken.IsCancellationRequested)
                    throw new OperationCanceledException(cancellationToken);
                return r;
            }
            finally
            {
                Release();
            }
        }

        /// <summary>Streams the continuation of <paramref name="prompt"/> piece by piece:
        /// <c>foreach (string piece in session.Stream(...))</c>. Breaking out of the loop (or
        /// disposing the enumerator) stops the generation within one token and leaves the session
        /// ready for the next call; cancelling the token does the same and makes the loop throw
        /// OperationCanceledException. After the loop, <see cref="TextStream.Result"/> holds the
        /// stop reason, counts and timings. The session is busy from the first MoveNext until the
        /// enumerator is disposed (foreach does that).</summary>
        public TextStream Stream(string prompt, GenerateOptions options = null,
                                 CancellationToken cancellationToken = default(CancellationToken))
        {
            if (prompt == null) throw new ArgumentNullException("prompt");
            return new TextStream(this, Encoding.UTF8.GetBytes(prompt), options, cancellationToken);
        }

        /// <summary>Clears the KV cache and history; the next call starts a new conversation.</summary>
        public void Reset()
        {
            Acquire();
            try { ZerfooException.Check(NativeMethods.zf_session_reset(handle), "zf_session_reset"); }
            finally { Release(); }
        }

        /// <summary>Gives the session a draft model for speculative decoding
        /// (zf_session_set_draft_model): with <see cref="GenerateOptions.DraftMax"/> the drafts come
        /// from <paramref name="draft"/>'s greedy output instead of prompt lookup, and the output is
        /// still token for token the output without it. The draft must have this model's vocabulary
        /// (<see cref="Status.InvalidArgument"/> naming the first difference otherwise). The session
        /// keeps the draft model alive; null removes it.</summary>
        public void SetDraftModel(Model draft)
        {
            Acquire();
            bool added = false;
            try
            {
                IntPtr d = IntPtr.Zero;
                if (draft != null)
                {
                    draft.Handle.DangerousAddRef(ref added);
                    d = draft.Handle.DangerousGetHandle();
                }
                ZerfooException.Check(NativeMethods.zf_session_set_draft_model(handle, d), "zf_session_set_draft_model");
            }
            finally
            {
                if (added) draft.Handle.DangerousRelease();
                Release();
            }
        }

        /// <summary>Stops a running generation at the next token boundary. Safe from any thread;
        /// does nothing when no generation is running.</summary>
        public void Cancel() { ForwardCancel(); }

        /// <summary>Appends tokens to the KV cache and writes the last position's logits
        /// (VocabSize floats) into <paramref name="logits"/> (empty: only extend the cache).</summary>
        /// <exception cref="ZerfooException">ContextFull, BufferTooSmall, InvalidArgument.</exception>
        public unsafe void Eval(ReadOnlySpan<int> tokens, Span<float> logits)
        {
            Acquire();
            try
            {
                int st;
                fixed (int* t = &MemoryMarshal.GetReference(tokens))
                fixed (float* l = &MemoryMarshal.GetReference(logits))
                {
                    st = NativeMethods.zf_session_eval(handle, t, (UIntPtr)tokens.Length, l, (UIntPtr)logits.Length);
                }
                ZerfooException.Check(st, "zf_session_eval");
            }
            finally
            {
                Release();
            }
        }

        /// <summary>Like <see cref="Eval(ReadOnlySpan{int}, Span{float})"/>, returning new logits.</summary>
        public float[] Eval(int[] tokens)
        {
            var logits = new float[model.Info.VocabSize];
            Eval(new ReadOnlySpan<int>(tokens), new Span<float>(logits));
            return logits;
        }

        /// <summary>Appends an image (JPEG, PNG, GIF's first frame or BMP bytes) at the end of the
        /// session as libmtmd places it: the projector's begin marker, the image's embeddings, the
        /// end marker (zf_session_eval_image); returns the last position's logits. With
        /// <c>Generate</c> after it (which continues the session) this is the raw-prompt route.</summary>
        /// <exception cref="ZerfooException">InvalidArgument (another model's projector, not an
        /// image), Format (corrupt bytes), ContextFull (nothing appended).</exception>
        public unsafe float[] EvalImage(Mmproj mmproj, byte[] image)
        {
            if (mmproj == null) throw new ArgumentNullException("mmproj");
            if (image == null) throw new ArgumentNullException("image");
            var logits = new float[model.Info.VocabSize];
            Acquire();
            GCHandle pin = GCHandle.Alloc(image, GCHandleType.Pinned);
            try
            {
                var im = Mmproj.RawImage(image, pin, 0u, 0u, 0u);
                int st;
                fixed (float* l = logits)
                {
                    st = NativeMethods.zf_session_eval_image(handle, mmproj.Handle, ref im, l, (UIntPtr)logits.Length);
                }
                ZerfooException.Check(st, "zf_session_eval_image");
                return logits;
            }
            finally
            {
                Release();
                pin.Free();
            }
        }

        /// <summary>Appends an audio clip (16 kHz mono samples) at the end of the session as
        /// libmtmd places it: the projector's begin marker (qwen2a, voxtral), the clip's embeddings,
        /// the end marker (zf_session_eval_audio); returns the last position's logits. With
        /// <c>Generate</c> after it (which continues the session) this is the raw-prompt route.</summary>
        /// <exception cref="ZerfooException">InvalidArgument (another model's or an image
        /// projector, the samples as <see cref="Mmproj.EmbedAudio"/> checks them; nothing appended),
        /// ContextFull.</exception>
        public unsafe float[] EvalAudio(Mmproj mmproj, float[] pcm)
        {
            if (mmproj == null) throw new ArgumentNullException("mmproj");
            if (pcm == null) throw new ArgumentNullException("pcm");
            var logits = new float[model.Info.VocabSize];
            Acquire();
            try
            {
                int st;
                // An empty clip still passes a valid pointer: the library then names the sample count.
                fixed (float* p = pcm.Length == 0 ? new float[1] : pcm)
                fixed (float* l = logits)
                {
                    st = NativeMethods.zf_session_eval_audio(handle, mmproj.Handle, p, (UIntPtr)pcm.Length, l,
                                                             (UIntPtr)logits.Length);
                }
                ZerfooException.Check(st, "zf_session_eval_audio");
                return logits;
            }
            finally
            {
                Release();
            }
        }

        /// <summary>Appends rows of input embeddings (<paramref name="width"/> floats each, the
        /// model's embedding width; e.g. an <see cref="ImageEmbedding"/>'s Data) in place of token
        /// embeddings, one position each (zf_session_eval_embeddings); returns the last position's
        /// logits. <paramref name="bidirectional"/>: the rows attend to each other both ways, as
        /// Gemma 3 reads an image (at most 512 rows then).</summary>
        public unsafe float[] EvalEmbeddings(float[] embd, int width, bool bidirectional)
        {
            if (embd == null) throw new ArgumentNullException("embd");
            if (width <= 0 || embd.Length % width != 0)
                throw new ArgumentException(embd.Length + " floats are not rows of width " + width, "width");
            var logits = new float[model.Info.VocabSize];
            Acquire();
            try
            {
                int st;
                fixed (float* e = embd)
                fixed (float* l = logits)
                {
                    st = NativeMethods.zf_session_eval_embeddings(handle, e, (UIntPtr)(embd.Length / width), (UIntPtr)width,
                                                                  bidirectional ? 1u : 0u, l, (UIntPtr)logits.Length);
                }
                ZerfooException.Check(st, "zf_session_eval_embeddings");
                return logits;
            }
            finally
            {
                Release();
            }
        }

        /// <summary>Frees the session (and its reference on the model). A generation running on
        /// another thread keeps the native session until it returns. Idempotent.</summary>
        public void Dispose()
        {
            Interlocked.Exchange(ref disposed, 1);
            handle.Dispose();
        }

        int disposed;

        // ------------------------------------------------------------------ internals

        internal void Acquire()
        {
            if (Interlocked.CompareExchange(ref busy, 1, 0) != 0)
                throw new InvalidOperationException(
                    "this Session is in use by another call; a session is used by one thread at a time " +
                    "(create one session per concurrent conversation)");
            if (Volatile.Read(ref disposed) != 0 || handle.IsClosed)
            {
                Volatile.Write(ref busy, 0);
                throw new ObjectDisposedException("Session");
            }
            lock (cancelGate) cancelRequested = false;
        }

        internal void Release() { Volatile.Write(ref busy, 0); }

        /// <summary>Forwards a cancel to zf_generate only while it runs: the ABI keeps a cancel
        /// that arrives with no call running for the next call, which must not inherit it.</summary>
        internal void ForwardCancel()
        {
            lock (cancelGate)
            {
                cancelRequested = true;
                if (inNative == 1 && !handle.IsClosed)
                {
                    try { NativeMethods.zf_session_cancel(handle); }
                    catch (ObjectDisposedException) { }
                }
            }
        }

        /// <summary>Runs zf_generate on the calling thread, streaming to <paramref name="sink"/>.
        /// The caller holds the session (Acquire).</summary>
        internal unsafe GenerateResult GenerateCore(byte[] prompt, GenerateOptions o, PieceSink sink)
        {
            var native = NativeGenerateParams.From(o);
            GCHandle gch = GCHandle.Alloc(sink);
            try
            {
                zf_generate_params p = native.Value;
                if (p.n_logprobs > 0)
                {
                    sink.LogprobsFrom = handle;
                    sink.Logprobs = new List<TokenLogprobs>();
                }
                var r = new zf_generate_result();
                r.struct_size = (uint)Marshal.SizeOf(typeof(zf_generate_result));
                int st;
                lock (cancelGate)
                {
                    inNative = 1;
                    // A cancel that came after Acquire but before this point: make the call stop
                    // at once (zf_generate consumes the request).
                    if (cancelRequested) NativeMethods.zf_session_cancel(handle);
                }
                try
                {
                    fixed (byte* text = prompt)
                    {
                        st = NativeMethods.zf_generate(handle, text, (UIntPtr)prompt.Length, ref p,
                                                       StreamDelegate, GCHandle.ToIntPtr(gch), ref r);
                    }
                    if (st != 0) ZerfooException.Check(st, "zf_generate");  // same thread, next call
                }
                finally
                {
                    lock (cancelGate) inNative = 0;
                }
                if (sink.Error != null)
                    System.Runtime.ExceptionServices.ExceptionDispatchInfo.Capture(sink.Error).Throw();
                return new GenerateResult
                {
                    Text = sink.Text(),
                    Tokens = sink.Tokens.ToArray(),
                    StopReason = (StopReason)r.stop_reason,
                    PromptTokens = r.n_prompt,
                    GeneratedTokens = r.n_generated,
                    PromptTime = TimeSpan.FromTicks((long)(r.prompt_ms * TimeSpan.TicksPerMillisecond)),
                    DecodeTime = TimeSpan.FromTicks((long)(r.decode_ms * TimeSpan.TicksPerMillisecond)),
                    Logprobs = sink.Logprobs == null ? null : sink.Logprobs.ToArray(),
                    DraftedTokens = r.n_drafted,
                    AcceptedTokens = r.n_accepted,
                };
            }
            finally
            {
                gch.Free();
                native.Dispose();
            }
        }

        // One delegate for every generation (it lives as long as the process, so no callback
        // can outlive it); the generation's state travels in user_data as a GCHandle.
        static readonly zf_stream_cb StreamDelegate = StreamTrampoline;

        [MonoPInvokeCallback(typeof(zf_stream_cb))]
        static unsafe int StreamTrampoline(IntPtr userData, IntPtr piece, UIntPtr len, int token)
        {
            var sink = (PieceSink)GCHandle.FromIntPtr(userData).Target;
            try
            {
                if (sink.LogprobsFrom != null)
                {
                    sink.PieceLogprobs = ReadLogprobs(sink.LogprobsFrom);
                    sink.Logprobs.AddRange(sink.PieceLogprobs);
                }
                return sink.OnPiece(new ReadOnlySpan<byte>((void*)piece, (int)len), token) ? 0 : 1;
            }
            catch (Exception e)
            {
                sink.Error = e;  // never unwind into native code; rethrown after zf_generate
                return 1;
            }
        }
    }

    public sealed partial class Session
    {
        /// <summary>zf_session_logprobs: the log-probabilities behind the piece delivered last,
        /// one TokenLogprobs per token.</summary>
        internal static unsafe TokenLogprobs[] ReadLogprobs(SessionHandle handle)
        {
            var buf = new zf_token_logprob[64];
            UIntPtr n, stride;
            for (;;)
            {
                int st;
                fixed (zf_token_logprob* b = buf)
                {
                    st = NativeMethods.zf_session_logprobs(handle, b, (UIntPtr)buf.Length, out n, out stride);
                }
                if (st == 6 && (long)n > buf.Length)  // ZF_ERR_BUFFER_TOO_SMALL: *n says how many
                {
                    buf = new zf_token_logprob[(long)n];
                    continue;
                }
                ZerfooException.Check(st, "zf_session_logprobs");
                break;
            }
            int k = (int)stride, total = (int)n;
            if (k == 0) return new TokenLogprobs[0];
            var result = new TokenLogprobs[total / k];
            for (int t = 0; t < result.Length; t++)
            {
                var top = new TokenLogprob[k - 1];
                for (int j = 1; j < k; j++)
                    top[j - 1] = new TokenLogprob { Token = buf[t * k + j].token, Logprob = buf[t * k + j].logprob };
                result[t] = new TokenLogprobs { Token = buf[t * k].token, Logprob = buf[t * k].logprob, Top = top };
            }
            return result;
        }
    }

    /// <summary>Receives the pieces of one generation (on the thread running zf_generate).</summary>
    internal abstract class PieceSink
    {
        internal Exception Error;
        // With GenerateOptions.Logprobs: the session to read them from, all so far, and the
        // current piece's (read by the trampoline before OnPiece).
        internal SessionHandle LogprobsFrom;
        internal List<TokenLogprobs> Logprobs;
        internal TokenLogprobs[] PieceLogprobs;
        internal readonly List<int> Tokens = new List<int>();
        readonly MemoryStream text = new MemoryStream();

        /// <summary>Returns false to stop the generation.</summary>
        internal virtual bool OnPiece(ReadOnlySpan<byte> piece, int token)
        {
            Tokens.Add(token);
            for (int i = 0; i < piece.Length; i++) text.WriteByte(piece[i]);
            return true;
        }

        internal string Text()
        {
            return Encoding.UTF8.GetString(text.GetBuffer(), 0, (int)text.Length);
        }
    }

    sealed class PieceCallbackSink : PieceSink
    {
        readonly Action<Piece> onPiece;

        internal PieceCallbackSink(Action<Piece> onPiece) { this.onPiece = onPiece; }

        internal override bool OnPiece(ReadOnlySpan<byte> piece, int token)
        {
            base.OnPiece(piece, token);
            onPiece(new Piece
            {
                Text = Encoding.UTF8.GetString(piece),
                Token = token,
                Logprobs = PieceLogprobs ?? new TokenLogprobs[0],
            });
            return true;
        }
    }

    sealed class CollectingSink : PieceSink
    {
        readonly Action<string> onPiece;

        internal CollectingSink(Action<string> onPiece) { this.onPiece = onPiece; }

        internal override bool OnPiece(ReadOnlySpan<byte> piece, int token)
        {
            base.OnPiece(piece, token);
            if (onPiece != null) onPiece(Encoding.UTF8.GetString(piece));
            return true;
        }
    }
}

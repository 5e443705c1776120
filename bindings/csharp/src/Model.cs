using System;
using System.Collections.Generic;
using System.Runtime.InteropServices;
using System.Text;
using System.Threading;

namespace Zerfoo
{
    /// <summary>Options for <see cref="Model.Load"/>. Unset (null) values keep the library's
    /// defaults (zf_model_params_init).</summary>
    public sealed class ModelOptions
    {
        /// <summary>Compute device (default Auto: the GPU if usable, else the CPU).</summary>
        public Device? Device { get; set; }
        /// <summary>CUDA device ordinal (default 0).</summary>
        public int? GpuIndex { get; set; }
        /// <summary>CPU threads sessions use by default (default 0 = physical cores).</summary>
        public int? Threads { get; set; }
        /// <summary>Load only the metadata and tokenizer (no weights, no sessions).</summary>
        public bool VocabOnly { get; set; }
        /// <summary>Read the file into memory instead of mapping it.</summary>
        public bool NoMmap { get; set; }
        /// <summary>Batched decode (continuous batching): with 2 or more, Generate / Stream calls
        /// on different sessions of the model from different threads share each decode step, up to
        /// this many sequences per step (the weights are read once for all of them). Each call still
        /// gets its own results and callbacks, and greedy output is the same alone or in a batch.
        /// Default 0 (off; 1 is off too); at most 64, else Load throws ZerfooException with
        /// Status.InvalidArgument. CPU engine only (ignored on CUDA).</summary>
        public int? MaxBatch { get; set; }
        /// <summary>The prefix cache's bound in MiB (zf_model_params.prefix_cache_mib): the KV rows
        /// of full 64-token blocks that sessions of the model evaluated are kept, keyed by the tokens
        /// of the block and of everything before it, and a session whose prompt continues its history
        /// with cached blocks copies them instead of computing them (a shared system prompt is
        /// evaluated once for every session). Reuse is exact: the logits are bit for bit those of
        /// evaluating the prompt (sessions with <see cref="SessionOptions.FastPrefill"/> take no
        /// part). Least recently used blocks are dropped beyond this many MiB. Default 0 (256 MiB);
        /// -1 = off; below -1 or above 1048576, Load throws ZerfooException with
        /// Status.InvalidArgument. A vocab-only model has no cache. See
        /// <see cref="Model.CacheInfo"/>.</summary>
        public int? PrefixCacheMiB { get; set; }
        /// <summary>Load progress in [0, 1], on the loading thread; return false to abort the
        /// load (it then throws ZerfooException with Status.Cancelled).</summary>
        public Func<float, bool> Progress { get; set; }
    }

    /// <summary>A model's fill-in-the-middle token ids, -1 where absent: from the GGUF's
    /// tokenizer.ggml.fim_*_token_id keys or found by their text ("&lt;|fim_prefix|&gt;",
    /// "&lt;PRE&gt;", ...). A prompt Pre prefix Suf suffix Mid asks for the middle; Rep and Sep
    /// frame repository files.</summary>
    public sealed class FimTokens
    {
        public int Pre { get; internal set; } = -1;
        public int Suf { get; internal set; } = -1;
        public int Mid { get; internal set; } = -1;
        public int Pad { get; internal set; } = -1;
        public int Rep { get; internal set; } = -1;
        public int Sep { get; internal set; } = -1;
        /// <summary>Whether the model has the prefix, suffix and middle tokens.</summary>
        public bool HasInfill { get { return Pre >= 0 && Suf >= 0 && Mid >= 0; } }

        public override string ToString()
        {
            return string.Format("pre {0}, suf {1}, mid {2}, pad {3}, rep {4}, sep {5}", Pre, Suf, Mid, Pad, Rep, Sep);
        }
    }

    /// <summary>Facts about a loaded model (zf_model_summary), read once at load.</summary>
    public sealed class ModelInfo
    {
        public Device Backend { get; internal set; }
        public string Architecture { get; internal set; }
        public string Name { get; internal set; }
        public string Quant { get; internal set; }
        public ulong ParameterCount { get; internal set; }
        public ulong FileSize { get; internal set; }
        public int ContextLengthTrain { get; internal set; }
        public int VocabSize { get; internal set; }
        public int Layers { get; internal set; }
        public int EmbeddingSize { get; internal set; }
        public int Heads { get; internal set; }
        public int KvHeads { get; internal set; }
        /// <summary>Beginning-of-sequence token id, or -1.</summary>
        public int TokenBos { get; internal set; }
        /// <summary>End-of-sequence token id, or -1.</summary>
        public int TokenEos { get; internal set; }
        /// <summary>End-of-turn token id, or -1.</summary>
        public int TokenEot { get; internal set; }
        public int Tensors { get; internal set; }
        /// <summary>Fill-in-the-middle tokens (ids -1 where absent).</summary>
        public FimTokens Fim { get; internal set; }

        public override string ToString()
        {
            return string.Format("{0} ({1}, {2}, {3:0.0}M params, {4} layers, vocab {5}, ctx {6}, {7})",
                Name, Architecture, Quant, ParameterCount / 1e6, Layers, VocabSize, ContextLengthTrain, Backend);
        }
    }

    /// <summary>The prefix cache's counters (zf_cache_info), from <see cref="Model.CacheInfo"/>;
    /// see <see cref="ModelOptions.PrefixCacheMiB"/>.</summary>
    public sealed class CacheInfo
    {
        /// <summary>Tokens per cached block (64); 0 when the cache is off.</summary>
        public int BlockTokens { get; internal set; }
        /// <summary>The bound in bytes (<see cref="ModelOptions.PrefixCacheMiB"/>).</summary>
        public ulong CapacityBytes { get; internal set; }
        /// <summary>KV bytes held now.</summary>
        public ulong Bytes { get; internal set; }
        /// <summary>Blocks held now (each once, however many sessions used it).</summary>
        public ulong Blocks { get; internal set; }
        /// <summary>Prompt tokens copied from the cache instead of evaluated.</summary>
        public ulong HitTokens { get; internal set; }
        /// <summary>Blocks stored since load.</summary>
        public ulong StoredBlocks { get; internal set; }
        /// <summary>Blocks dropped for the bound since load.</summary>
        public ulong EvictedBlocks { get; internal set; }
        /// <summary>Block mappings alive: sessions reading a cached block's rows in place
        /// (a block in n sessions counts n times); 0 where pages cannot be shared.</summary>
        public ulong MappedBlocks { get; internal set; }

        public override string ToString()
        {
            return string.Format("{0} blocks of {1} tokens ({2} of {3} bytes), {4} hit tokens, {5} stored, {6} evicted, {7} mapped",
                Blocks, BlockTokens, Bytes, CapacityBytes, HitTokens, StoredBlocks, EvictedBlocks, MappedBlocks);
        }
    }

    /// <summary>Flags for <see cref="Model.Tokenize(string, TokenizeFlags)"/>.</summary>
    [Flags]
    public enum TokenizeFlags : uint
    {
        None = 0,
        /// <summary>Add BOS/EOS as the model's metadata asks.</summary>
        AddSpecial = 1,
        /// <summary>Match special-token text (e.g. "&lt;eos&gt;") as tokens.</summary>
        ParseSpecial = 2,
    }

    /// <summary>Flags for <see cref="Model.Detokenize(int[], DetokenizeFlags)"/>.</summary>
    [Flags]
    public enum DetokenizeFlags : uint
    {
        None = 0,
        /// <summary>Drop leading BOS / trailing EOS from the text.</summary>
        RemoveSpecial = 1,
        /// <summary>Render control tokens' text (else skipped).</summary>
        RenderSpecial = 2,
    }

    /// <summary>One chat turn for <see cref="Model.ApplyChatTemplate"/>.</summary>
    public struct ChatMessage
    {
        public ChatMessage(string role, string content) { Role = role; Content = content; }

        /// <summary>"system", "user" or "assistant".</summary>
        public string Role { get; }
        public string Content { get; }

        public static ChatMessage System(string content) { return new ChatMessage("system", content); }
        public static ChatMessage User(string content) { return new ChatMessage("user", content); }
        public static ChatMessage Assistant(string content) { return new ChatMessage("assistant", content); }
    }

    /// <summary>A loaded GGUF model. Immutable and thread-safe: share one Model between any
    /// number of threads and sessions. Dispose it when done (sessions made from it keep the
    /// native model alive until they are disposed too); a leaked Model is freed by its finalizer.</summary>
    public sealed partial class Model : IDisposable
    {
        readonly ModelHandle handle;

        Model(ModelHandle h, ModelInfo info, string path)
        {
            handle = h;
            Info = info;
            Path = path;
        }

        internal ModelHandle Handle { get { return handle; } }

        /// <summary>The file this model was loaded from.</summary>
        public string Path { get; private set; }

        /// <summary>Architecture, sizes, special tokens (read once at load).</summary>
        public ModelInfo Info { get; private set; }

        /// <summary>Loads a GGUF file.</summary>
        /// <exception cref="ZerfooException">IO (cannot open), Format (not a valid GGUF file),
        /// Unsupported (architecture or tensor type), Backend, Cancelled (by Progress),
        /// OutOfMemory.</exception>
        /// <exception cref="ZerfooLibraryException">libzerfoo missing or too old.</exception>
        public static Model Load(string path, ModelOptions options = null)
        {
            if (path == null) throw new ArgumentNullException("path");
            Library.EnsureLoaded();
            return LoadCore(path, options);  // see Library.NativeVersion: bind DllImports after the load
        }

        [System.Runtime.CompilerServices.MethodImpl(System.Runtime.CompilerServices.MethodImplOptions.NoInlining)]
        static Model LoadCore(string path, ModelOptions options)
        {
            var p = new zf_model_params();
            ZerfooException.Check(NativeMethods.zf_model_params_init(ref p,
                (UIntPtr)Marshal.SizeOf(typeof(zf_model_params))), "zf_model_params_init");
            GCHandle progress = default(GCHandle);
            if (options != null)
            {
                if (options.Device.HasValue) p.device = (int)options.Device.Value;
                if (options.GpuIndex.HasValue) p.gpu_index = options.GpuIndex.Value;
                if (options.Threads.HasValue) p.n_threads = options.Threads.Value;
                if (options.MaxBatch.HasValue) p.max_batch = options.MaxBatch.Value;
                if (options.PrefixCacheMiB.HasValue) p.prefix_cache_mib = options.PrefixCacheMiB.Value;
                if (options.VocabOnly) p.flags |= 1u;
                if (options.NoMmap) p.flags |= 2u;
                if (options.Progress != null)
                {
                    progress = GCHandle.Alloc(new ProgressState { Callback = options.Progress });
                    p.progress = Marshal.GetFunctionPointerForDelegate(ProgressDelegate);
                    p.progress_user_data = GCHandle.ToIntPtr(progress);
                }
            }
            IntPtr raw;
            int st;
            try
            {
                st = NativeMethods.zf_model_load(Library.Utf8Z(path), ref p, out raw);
                if (st != 0)
                {
                    // zf_last_error is read before anything else can call into zerfoo on this thread.
                    try { ZerfooException.Check(st, "zf_model_load(\"" + path + "\")"); }
                    catch (ZerfooException e)
                    {
                        var ps = progress.IsAllocated ? (ProgressState)progress.Target : null;
                        if (ps != null && ps.Error != null)
                            throw new ZerfooException(e.Status, e.Message + " (the Progress callback threw: " + ps.Error.Message + ")");
                        throw;
                    }
                }
            }
            finally
            {
                if (progress.IsAllocated) progress.Free();
            }
            ModelHandle h = ModelHandle.FromNative(raw);
            try
            {
                return new Model(h, ReadInfo(h), path);
            }
            catch
            {
                h.Dispose();
                throw;
            }
        }

        static ModelInfo ReadInfo(ModelHandle h)
        {
            var s = new zf_model_summary();
            s.struct_size = (uint)Marshal.SizeOf(typeof(zf_model_summary));
            ZerfooException.Check(NativeMethods.zf_model_info(h, ref s), "zf_model_info");
            // The strings belong to the model, which is alive: nothing else holds h yet.
            return new ModelInfo
            {
                Backend = (Device)s.backend,
                Architecture = Library.Utf8(s.architecture),
                Name = Library.Utf8(s.name),
                Quant = Library.Utf8(s.quant),
                ParameterCount = s.n_params,
                FileSize = s.file_size,
                ContextLengthTrain = s.n_ctx_train,
                VocabSize = s.n_vocab,
                Layers = s.n_layer,
                EmbeddingSize = s.n_embd,
                Heads = s.n_head,
                KvHeads = s.n_head_kv,
                TokenBos = s.token_bos,
                TokenEos = s.token_eos,
                TokenEot = s.token_eot,
                Tensors = s.n_tensors,
                // An older library fills a smaller struct: no FIM ids then.
                Fim = s.struct_size < (uint)Marshal.SizeOf(typeof(zf_model_summary)) ? new FimTokens() : new FimTokens
                {
                    Pre = s.token_fim_pre, Suf = s.token_fim_suf, Mid = s.token_fim_mid,
                    Pad = s.token_fim_pad, Rep = s.token_fim_rep, Sep = s.token_fim_sep,
                },
            };
        }

        /// <summary>The prefix cache's counters now (zf_model_cache_info). Thread-safe.</summary>
        /// <exception cref="ObjectDisposedException">The model was disposed.</exception>
        public CacheInfo CacheInfo()
        {
            if (disposed != 0) throw new ObjectDisposedException("Model");
            var c = new zf_cache_info();
            c.struct_size = (uint)Marshal.SizeOf(typeof(zf_cache_info));
            ZerfooException.Check(NativeMethods.zf_model_cache_info(handle, ref c), "zf_model_cache_info");
            return new CacheInfo
            {
                BlockTokens = c.block_tokens,
                CapacityBytes = c.capacity_bytes,
                Bytes = c.bytes,
                Blocks = c.blocks,
                HitTokens = c.hit_tokens,
                StoredBlocks = c.stored_blocks,
                EvictedBlocks = c.evicted_blocks,
                MappedBlocks = c.mapped_blocks,
            };
        }

        /// <summary>Any GGUF metadata value as text (numbers in decimal, arrays as [a, b]).</summary>
        /// <exception cref="ZerfooException">NotFound for a missing key.</exception>
        public string Meta(string key)
        {
            byte[] k = Library.Utf8Z(key);
            byte[] buf = new byte[256];
            for (;;)
            {
                UIntPtr needed;
                int st = NativeMethods.zf_model_meta(handle, k, buf, (UIntPtr)buf.Length, out needed);
                if (st == (int)Status.BufferTooSmall) { buf = new byte[(int)needed]; continue; }
                ZerfooException.Check(st, "zf_model_meta(\"" + key + "\")");
                return Encoding.UTF8.GetString(buf, 0, (int)needed - 1);
            }
        }

        /// <summary>Like <see cref="Meta"/> but false for a missing key.</summary>
        public bool TryGetMeta(string key, out string value)
        {
            try { value = Meta(key); return true; }
            catch (ZerfooException e) when (e.Status == Status.NotFound) { value = null; return false; }
        }

        /// <summary>Compiles <paramref name="constraint"/> for this model's vocabulary and discards
        /// it (zf_constraint_check): returns when <see cref="GenerateOptions.Constraint"/> would
        /// accept it; throws <see cref="ZerfooException"/> with
        /// <see cref="Status.InvalidArgument"/> and the compiler's message for an invalid one, or
        /// <see cref="Status.Unsupported"/> for a library built without constraints. The first
        /// constraint on a model builds llguidance's view of its vocabulary (kept with the model).
        /// Thread-safe.</summary>
        public void CheckConstraint(Constraint constraint)
        {
            if (constraint == null) throw new ArgumentNullException("constraint");
            CheckConstraint(constraint.Kind, constraint.Text);
        }

        /// <summary>Like <see cref="CheckConstraint(Constraint)"/>, for a kind and its text.</summary>
        public void CheckConstraint(ConstraintKind kind, string text)
        {
            if (text == null) throw new ArgumentNullException("text");
            ZerfooException.Check(NativeMethods.zf_constraint_check(handle, (int)kind, Library.Utf8Z(text)),
                                  "zf_constraint_check");
        }

        /// <summary>Text to token ids. The default adds BOS where the model wants it and parses
        /// special-token text, as generation does. Thread-safe.</summary>
        public int[] Tokenize(string text, TokenizeFlags flags = TokenizeFlags.AddSpecial | TokenizeFlags.ParseSpecial)
        {
            if (text == null) throw new ArgumentNullException("text");
            byte[] utf8 = Encoding.UTF8.GetBytes(text);
            int[] tokens = new int[utf8.Length + 8];
            int n = Tokenize(utf8, tokens, flags);
            if (n > tokens.Length)
            {
                tokens = new int[n];
                n = Tokenize(utf8, tokens, flags);
            }
            Array.Resize(ref tokens, n);
            return tokens;
        }

        /// <summary>Tokenizes UTF-8 bytes into a caller's buffer without allocating. Returns the
        /// number of tokens; when that exceeds tokens.Length nothing usable was written: retry
        /// with a buffer that large.</summary>
        public unsafe int Tokenize(ReadOnlySpan<byte> utf8, Span<int> tokens, TokenizeFlags flags)
        {
            UIntPtr n;
            int st;
            fixed (byte* t = &MemoryMarshal.GetReference(utf8))
            fixed (int* o = &MemoryMarshal.GetReference(tokens))
            {
                st = NativeMethods.zf_tokenize(handle, t, (UIntPtr)utf8.Length, (uint)flags, o,
                                               (UIntPtr)tokens.Length, out n);
            }
            if (st == (int)Status.BufferTooSmall) return (int)n;
            ZerfooException.Check(st, "zf_tokenize");
            return (int)n;
        }

        /// <summary>Token ids to text. Thread-safe.</summary>
        /// <exception cref="ZerfooException">InvalidArgument for an id outside the vocabulary.</exception>
        public string Detokenize(int[] tokens, DetokenizeFlags flags = DetokenizeFlags.None)
        {
            if (tokens == null) throw new ArgumentNullException("tokens");
            return Detokenize(new ReadOnlySpan<int>(tokens), flags);
        }

        /// <summary>Token ids to text. Thread-safe.</summary>
        public unsafe string Detokenize(ReadOnlySpan<int> tokens, DetokenizeFlags flags = DetokenizeFlags.None)
        {
            byte[] buf = new byte[tokens.Length * 8 + 16];
            for (;;)
            {
                UIntPtr needed;
                int st;
                fixed (int* t = &MemoryMarshal.GetReference(tokens))
                fixed (byte* b = buf)
                {
                    st = NativeMethods.zf_detokenize(handle, t, (UIntPtr)tokens.Length, (uint)flags, b,
                                                     (UIntPtr)buf.Length, out needed);
                }
                if (st == (int)Status.BufferTooSmall) { buf = new byte[(int)needed]; continue; }
                ZerfooException.Check(st, "zf_detokenize");
                return Encoding.UTF8.GetString(buf, 0, (int)needed - 1);
            }
        }

        /// <summary>The raw bytes of one token's text (may be a partial UTF-8 sequence for byte
        /// tokens; control tokens are empty unless RenderSpecial).</summary>
        public byte[] TokenToPiece(int token, DetokenizeFlags flags = DetokenizeFlags.None)
        {
            byte[] buf = new byte[32];
            for (;;)
            {
                UIntPtr needed;
                int st = NativeMethods.zf_token_to_piece(handle, token, (uint)flags, buf, (UIntPtr)buf.Length, out needed);
                if (st == (int)Status.BufferTooSmall) { buf = new byte[(int)needed]; continue; }
                ZerfooException.Check(st, "zf_token_to_piece");
                Array.Resize(ref buf, (int)needed);
                return buf;
            }
        }

        /// <summary>Renders messages with the model's chat template (tokenizer.chat_template).
        /// With addAssistant the text ends with the prefix that starts the assistant's turn, ready
        /// for generation. Thread-safe.</summary>
        /// <exception cref="ZerfooException">Unsupported for an unknown template.</exception>
        public string ApplyChatTemplate(IEnumerable<ChatMessage> messages, bool addAssistant = true)
        {
            if (messages == null) throw new ArgumentNullException("messages");
            var list = new List<ChatMessage>(messages);
            var native = new zf_chat_message[list.Count];
            var owned = new List<IntPtr>(list.Count * 2);
            try
            {
                int total = 64;
                for (int i = 0; i < list.Count; i++)
                {
                    if (list[i].Role == null || list[i].Content == null)
                        throw new ArgumentException("message " + i + " has a null role or content");
                    native[i].role = Library.AllocUtf8Z(list[i].Role);
                    owned.Add(native[i].role);
                    native[i].content = Library.AllocUtf8Z(list[i].Content);
                    owned.Add(native[i].content);
                    total += Encoding.UTF8.GetByteCount(list[i].Content) + 64;
                }
                byte[] buf = new byte[total];
                for (;;)
                {
                    UIntPtr needed;
                    int st = NativeMethods.zf_chat_apply_template(handle, native, (UIntPtr)native.Length,
                        addAssistant ? 1u : 0u, buf, (UIntPtr)buf.Length, out needed);
                    if (st == (int)Status.BufferTooSmall) { buf = new byte[(int)needed]; continue; }
                    ZerfooException.Check(st, "zf_chat_apply_template");
                    return Encoding.UTF8.GetString(buf, 0, (int)needed - 1);
                }
            }
            finally
            {
                foreach (IntPtr p in owned) Marshal.FreeHGlobal(p);
            }
        }

        /// <summary>Creates a session (KV cache + sampler) on this model. The session keeps the
        /// native model alive until it is disposed, even if this Model is disposed first.</summary>
        /// <exception cref="ObjectDisposedException">The model was disposed.</exception>
        /// <exception cref="ZerfooException">InvalidArgument (vocab-only model, bad options),
        /// OutOfMemory.</exception>
        public Session CreateSession(SessionOptions options = null)
        {
            if (disposed != 0) throw new ObjectDisposedException("Model");
            var p = new zf_session_params();
            ZerfooException.Check(NativeMethods.zf_session_params_init(ref p,
                (UIntPtr)Marshal.SizeOf(typeof(zf_session_params))), "zf_session_params_init");
            if (options != null)
            {
                if (options.ContextSize.HasValue) p.n_ctx = options.ContextSize.Value;
                if (options.Threads.HasValue) p.n_threads = options.Threads.Value;
                if (options.KvF32) p.kv_type = 0;
                if (options.KvTypeK.HasValue) p.kv_type = (int)options.KvTypeK.Value;
                if (options.KvTypeV.HasValue) p.kv_type_v = (int)options.KvTypeV.Value;
                if (options.FastPrefill) p.flags |= 1u;  // ZF_SESSION_FAST_PREFILL
            }
            return new Session(this, SessionHandle.Create(handle, ref p));
        }

        /// <summary>Releases this reference to the native model; the model itself is freed once
        /// its last session is disposed too. Idempotent.</summary>
        public void Dispose()
        {
            // SafeHandle.IsClosed stays false while sessions hold references (Mono), so the
            // model tracks its own Dispose.
            Interlocked.Exchange(ref disposed, 1);
            handle.Dispose();
        }

        int disposed;

        /// <summary>True after Dispose.</summary>
        public bool IsDisposed { get { return Volatile.Read(ref disposed) != 0; } }

        // ------------------------------------------------------------------ load progress

        sealed class ProgressState
        {
            internal Func<float, bool> Callback;
            internal Exception Error;
        }

        static readonly zf_progress_cb ProgressDelegate = ProgressTrampoline;  // lives forever

        [MonoPInvokeCallback(typeof(zf_progress_cb))]
        static int ProgressTrampoline(IntPtr userData, int permille)
        {
            var s = (ProgressState)GCHandle.FromIntPtr(userData).Target;
            try
            {
                return s.Callback(permille / 1000f) ? 0 : 1;
            }
            catch (Exception e)
            {
                s.Error = e;  // never unwind into native code: abort the load, report it after
                return 1;
            }
        }
    }
}

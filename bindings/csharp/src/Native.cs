// P/Invoke declarations for include/zerfoo.h, one per exported function, in header order.
// C# 7.2 (Mono's mcs and .NET alike). Conventions, checked against the header by
// tests/AbiTests.cs: size_t is UIntPtr, pointers are IntPtr / byte[] / int[] / ref / out /
// SafeHandle / delegate, int32_t is int, uint32_t is uint, uint64_t is ulong. Strings cross as
// UTF-8 bytes that the binding encodes itself (never the platform's default marshalling).
using System;
using System.Runtime.InteropServices;

namespace Zerfoo
{
    /// <summary>Marks the static methods native code calls back into (needed by Mono's AOT
    /// mode, harmless elsewhere). Mono recognizes the attribute by name in any namespace.</summary>
    [AttributeUsage(AttributeTargets.Method)]
    internal sealed class MonoPInvokeCallbackAttribute : Attribute
    {
        public MonoPInvokeCallbackAttribute(Type delegateType) { DelegateType = delegateType; }
        public Type DelegateType { get; private set; }
    }

    [StructLayout(LayoutKind.Sequential)]
    internal struct zf_model_params
    {
        public uint struct_size;
        public int device;
        public int gpu_index;
        public int n_threads;
        public uint flags;
        public uint reserved0;
        public IntPtr progress;            // zf_progress_cb
        public IntPtr progress_user_data;
        public int max_batch;              // appended in 0.3
        public uint reserved1;
        public int prefix_cache_mib;       // appended in 0.4
        public uint reserved2;
    }

    [StructLayout(LayoutKind.Sequential)]
    internal struct zf_model_summary
    {
        public uint struct_size;
        public int backend;
        public IntPtr architecture;
        public IntPtr name;
        public IntPtr quant;
        public ulong n_params;
        public ulong file_size;
        public int n_ctx_train;
        public int n_vocab;
        public int n_layer;
        public int n_embd;
        public int n_head;
        public int n_head_kv;
        public int token_bos;
        public int token_eos;
        public int token_eot;
        public int n_tensors;
        public int token_fim_pre;          // appended in 0.5
        public int token_fim_suf;
        public int token_fim_mid;
        public int token_fim_pad;
        public int token_fim_rep;
        public int token_fim_sep;
    }

    [StructLayout(LayoutKind.Sequential)]
    internal struct zf_speech_summary      // since 0.7
    {
        public uint struct_size;
        public int n_vocab;
        public int n_mels;
        public int n_audio_layer;
        public int n_text_layer;
        public int n_audio_state;
        public int multilingual;
        public uint reserved;
    }

    [StructLayout(LayoutKind.Sequential)]
    internal struct zf_transcribe_params   // since 0.7
    {
        public uint struct_size;
        public int n_threads;
        public IntPtr language;            // const char*: NULL or UTF-8, pinned for the call
        public IntPtr initial_prompt;
        public uint flags;
        public uint reserved;
        // Appended (issue #47 decoding).
        public float temperature;
        public float temperature_inc;
        public int beam_size;
        public int best_of;
        public float length_penalty;
        public float entropy_thold;
        public float logprob_thold;
        public float no_speech_thold;
        public uint seed;
        public int n_max_text_ctx;
    }

    [StructLayout(LayoutKind.Sequential)]
    internal struct zf_speech_token        // since 0.7
    {
        public int id;
        public float p;
        public float plog;
        public uint reserved;
    }

    [StructLayout(LayoutKind.Sequential)]
    internal struct zf_speech_segment      // since 0.7
    {
        public uint struct_size;
        public uint reserved;
        public long t0_ms;
        public long t1_ms;
        public IntPtr text;
        public UIntPtr text_len;
        public IntPtr tokens;
        public UIntPtr n_tokens;
        public float no_speech_prob;
        public uint reserved2;
        // Appended (issue #47 decoding).
        public IntPtr token_times;         // zf_speech_token_time[n_tokens] or NULL
        public IntPtr words;               // zf_speech_word[n_words] or NULL
        public UIntPtr n_words;
        public float temperature;
        public float avg_logprob;
    }

    [StructLayout(LayoutKind.Sequential)]
    internal struct zf_speech_token_time   // issue #47 decoding
    {
        public long t0_ms;
        public long t1_ms;
    }

    [StructLayout(LayoutKind.Sequential)]
    internal struct zf_speech_word         // issue #47 decoding
    {
        public IntPtr text;
        public UIntPtr text_len;
        public long t0_ms;
        public long t1_ms;
        public float p;
        public uint reserved;
    }

    [StructLayout(LayoutKind.Sequential)]
    internal struct zf_mmproj_summary      // since 0.7
    {
        public uint struct_size;
        public int image_size;
        public int patch_size;
        public int n_tokens;
        public int n_embd;
        public int n_embd_vision;
        public int n_layer;
        public uint reserved;
        public IntPtr projector_type;
        public uint modalities;            // since 0.7's audio projectors: ZF_MODALITY_IMAGE | ZF_MODALITY_AUDIO
        public int sample_rate;
    }

    [StructLayout(LayoutKind.Sequential)]
    internal struct zf_image               // since 0.7
    {
        public uint struct_size;
        public uint format;
        public IntPtr data;
        public UIntPtr size;
        public uint width;
        public uint height;
    }

    [StructLayout(LayoutKind.Sequential)]
    internal struct zf_lora_summary        // since 0.6
    {
        public uint struct_size;
        public int rank;
        public float alpha;
        public uint n_weights;
    }

    [StructLayout(LayoutKind.Sequential)]
    internal struct zf_cache_info          // appended in 0.4
    {
        public uint struct_size;
        public int block_tokens;
        public ulong capacity_bytes;
        public ulong bytes;
        public ulong blocks;
        public ulong hit_tokens;
        public ulong stored_blocks;
        public ulong evicted_blocks;
        public ulong mapped_blocks;
    }

    [StructLayout(LayoutKind.Sequential)]
    internal struct zf_chat_message
    {
        public IntPtr role;
        public IntPtr content;
    }

    [StructLayout(LayoutKind.Sequential)]
    internal struct zf_chat_params
    {
        public uint struct_size;
        public uint flags;
        public IntPtr template_name;
        public IntPtr template_text;
        public IntPtr tools_json;
        public IntPtr documents_json;
        public IntPtr extra_json;
        public long time_unix;
    }

    [StructLayout(LayoutKind.Sequential)]
    internal struct zf_session_params
    {
        public uint struct_size;
        public int n_ctx;
        public int n_threads;
        public int kv_type;
        public uint flags;                 // appended in 0.4: ZF_SESSION_FAST_PREFILL
        public uint reserved0;
        public int kv_type_v;              // appended in 0.7: ZF_KV_SAME (-1) or V's type
        public uint reserved1;
    }

    [StructLayout(LayoutKind.Sequential)]
    internal struct zf_generate_params
    {
        public uint struct_size;
        public int max_tokens;
        public float temperature;
        public int top_k;
        public float top_p;
        public float min_p;
        public float repeat_penalty;
        public int repeat_last_n;
        public uint flags;
        public uint reserved0;
        public ulong seed;
        public IntPtr stop;               // const char* const*
        public UIntPtr n_stop;
        public int n_logprobs;            // appended in 0.3
        public uint reserved1;
        public IntPtr constraint;         // appended in 0.3: const char* (NUL-terminated UTF-8)
        public int constraint_kind;       // ZF_CONSTRAINT_*
        public uint reserved2;
        public IntPtr constraint_trigger; // appended in 0.3: const char* (a lazy constraint's trigger)
        public int draft_max;             // appended in 0.4: prompt-lookup drafts (0 = off)
        public int draft_min;
    }

    [StructLayout(LayoutKind.Sequential)]
    internal struct zf_token_logprob
    {
        public int token;
        public float logprob;
    }

    [StructLayout(LayoutKind.Sequential)]
    internal struct zf_generate_result
    {
        public uint struct_size;
        public int stop_reason;
        public int n_prompt;
        public int n_generated;
        public double prompt_ms;
        public double decode_ms;
        public int n_drafted;             // appended in 0.4
        public int n_accepted;
    }

    [StructLayout(LayoutKind.Sequential)]
    internal struct zf_embed_params      // appended in 0.4
    {
        public uint struct_size;
        public uint flags;                // ZF_EMBED_NO_NORMALIZE
        public int pooling;               // ZF_POOLING_*
        public int dimensions;
        public int n_threads;
        public uint reserved;
    }

    [StructLayout(LayoutKind.Sequential)]
    internal struct zf_turn_event         // since 0.5; pointers borrowed until the next event
    {
        public uint struct_size;
        public int kind;                  // ZF_TURN_*
        public IntPtr text;               // not NUL-terminated
        public UIntPtr text_len;
        public int tool_index;
        public int finish_reason;         // ZF_FINISH_*
        public IntPtr tool_id;
        public IntPtr tool_name;
        public IntPtr logprobs;           // const zf_token_logprob*
        public UIntPtr n_logprobs;
        public UIntPtr logprob_stride;
        public int stop_reason;
        public int n_prompt;
        public int n_cached;
        public int n_generated;
        public int n_drafted;
        public int n_accepted;
        public double prompt_ms;
        public double decode_ms;
    }

    [StructLayout(LayoutKind.Sequential)]
    internal struct zf_turn_params        // since 0.5
    {
        public uint struct_size;
        public uint flags;                // ZF_CHAT_FIXED_TIME
        public IntPtr request_json;
        public IntPtr template_name;
        public IntPtr template_text;
        public IntPtr generate;           // const zf_generate_params*
        public long time_unix;
        public IntPtr mmproj;             // const zf_mmproj* (since 0.7): the request's image parts
    }

    [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
    internal delegate int zf_log_cb(IntPtr user_data, int level, IntPtr msg);

    [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
    internal delegate int zf_progress_cb(IntPtr user_data, int progress);

    [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
    internal delegate int zf_stream_cb(IntPtr user_data, IntPtr piece, UIntPtr len, int token);

    [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
    internal delegate int zf_turn_cb(IntPtr user_data, IntPtr turn_event);

    [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
    internal delegate int zf_segment_cb(IntPtr user_data, IntPtr segment);

    internal static class NativeMethods
    {
        /// <summary>The logical library name. Mono maps it through Zerfoo.dll.config; .NET
        /// through the resolver in Library.Net.cs.</summary>
        internal const string Lib = "zerfoo";

        /// <summary>The header version this binding was written for (ZF_VERSION_MAJOR/MINOR).</summary>
        internal const int HeaderMajor = 0;
        internal const int HeaderMinor = 7;

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern uint zf_version();

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern IntPtr zf_version_string();

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern IntPtr zf_status_string(int status);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern IntPtr zf_last_error();

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern int zf_set_log_callback(zf_log_cb cb, IntPtr user_data);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern int zf_set_log_level(int level);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern int zf_backend_available(int device);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern int zf_model_params_init(ref zf_model_params p, UIntPtr size);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern int zf_model_load(byte[] path, ref zf_model_params p, out IntPtr model);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern void zf_model_free(IntPtr model);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern int zf_model_info(ModelHandle model, ref zf_model_summary info);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern int zf_model_cache_info(ModelHandle model, ref zf_cache_info info);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern int zf_model_meta(ModelHandle model, byte[] key, byte[] buf, UIntPtr cap,
                                                 out UIntPtr needed);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern unsafe int zf_tokenize(ModelHandle model, byte* text, UIntPtr len, uint flags,
                                                      int* tokens, UIntPtr cap, out UIntPtr n);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern unsafe int zf_detokenize(ModelHandle model, int* tokens, UIntPtr n, uint flags,
                                                        byte* buf, UIntPtr cap, out UIntPtr needed);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern int zf_token_to_piece(ModelHandle model, int token, uint flags, byte[] buf,
                                                     UIntPtr cap, out UIntPtr needed);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern int zf_chat_apply_template(ModelHandle model, zf_chat_message[] msgs, UIntPtr n_msgs,
                                                          uint flags, byte[] buf, UIntPtr cap, out UIntPtr needed);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern unsafe int zf_chat_parse(ModelHandle model, byte* text, UIntPtr len, ref zf_chat_params p,
                                                        byte[] buf, UIntPtr cap, out UIntPtr needed);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern int zf_chat_tool_grammar(ModelHandle model, ref zf_chat_params p, byte[] buf, UIntPtr cap,
                                                        out UIntPtr needed);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern int zf_session_params_init(ref zf_session_params p, UIntPtr size);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern int zf_session_create(ModelHandle model, ref zf_session_params p, out IntPtr session);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern void zf_session_free(IntPtr session);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern int zf_session_reset(SessionHandle session);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern int zf_session_cancel(SessionHandle session);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern int zf_session_n_past(SessionHandle session, out int n_past);

        // IntPtr, not ModelHandle: NULL removes the draft (Session.SetDraftModel keeps the handle alive).
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern int zf_session_set_draft_model(SessionHandle session, IntPtr draft);

        // Speech to text (since 0.7).
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern int zf_speech_load(byte[] path, uint flags, out IntPtr model);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern void zf_speech_free(IntPtr model);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern int zf_speech_info(SpeechHandle model, ref zf_speech_summary info);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern int zf_transcribe_params_init(ref zf_transcribe_params p, UIntPtr size);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern int zf_transcribe(SpeechHandle model, float[] pcm, UIntPtr n, ref zf_transcribe_params p,
                                                 zf_segment_cb cb, IntPtr user_data, out IntPtr result);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern UIntPtr zf_transcription_n_segments(IntPtr result);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern int zf_transcription_segment(IntPtr result, UIntPtr i, ref zf_speech_segment segment);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern int zf_transcription_text(IntPtr result, byte[] buf, UIntPtr cap, out UIntPtr needed);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern int zf_transcription_language(IntPtr result, byte[] buf, UIntPtr cap, out UIntPtr needed);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern void zf_transcription_free(IntPtr result);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern int zf_transcription_language_prob(IntPtr result, out float prob);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern int zf_speech_token_text(SpeechHandle model, int id, byte[] buf, UIntPtr cap,
                                                        out UIntPtr needed);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern int zf_wav_decode(byte[] data, UIntPtr size, float[] pcm, UIntPtr cap, out UIntPtr n);

        // Images (since 0.7).
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern int zf_mmproj_load(ModelHandle model, byte[] path, uint flags, out IntPtr mmproj);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern void zf_mmproj_free(IntPtr mmproj);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern int zf_mmproj_info(MmprojHandle mmproj, ref zf_mmproj_summary info);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern unsafe int zf_session_eval_image(SessionHandle session, MmprojHandle mmproj, ref zf_image image,
                                                                float* logits, UIntPtr cap);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern unsafe int zf_session_eval_embeddings(SessionHandle session, float* embd, UIntPtr n_tokens,
                                                                     UIntPtr width, uint flags, float* logits, UIntPtr cap);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern int zf_image_embed(MmprojHandle mmproj, ref zf_image image, int n_threads, float[] output,
                                                  UIntPtr cap, out UIntPtr needed, out int n_tokens);

        // Audio (since 0.7).
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern unsafe int zf_audio_embed(MmprojHandle mmproj, float* pcm, UIntPtr n_samples, int n_threads,
                                                         float[] output, UIntPtr cap, out UIntPtr needed, out int n_tokens);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern unsafe int zf_session_eval_audio(SessionHandle session, MmprojHandle mmproj, float* pcm,
                                                                UIntPtr n_samples, float* logits, UIntPtr cap);

        // LoRA adapters (since 0.6).
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern int zf_lora_load(ModelHandle model, byte[] path, out IntPtr adapter);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern void zf_lora_free(IntPtr adapter);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern int zf_lora_info(LoraHandle adapter, ref zf_lora_summary info);

        // IntPtr[]: Session.SetLoras holds a reference on each adapter's handle for the call.
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern int zf_session_set_loras(SessionHandle session, IntPtr[] adapters, float[] scales,
                                                        UIntPtr n);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern unsafe int zf_session_eval(SessionHandle session, int* tokens, UIntPtr n,
                                                          float* logits, UIntPtr cap);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern int zf_constraint_check(ModelHandle model, int kind, byte[] constraint);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern int zf_generate_params_init(ref zf_generate_params p, UIntPtr size);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern unsafe int zf_generate(SessionHandle session, byte* prompt, UIntPtr len,
                                                      ref zf_generate_params p, zf_stream_cb cb, IntPtr user_data,
                                                      ref zf_generate_result result);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern int zf_embed_params_init(ref zf_embed_params p, UIntPtr size);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern int zf_embed_dimension(ModelHandle model, ref zf_embed_params p, out UIntPtr dim);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern unsafe int zf_embed(ModelHandle model, ref zf_embed_params p, IntPtr* texts, UIntPtr* lens,
                                                   UIntPtr n, float* output, UIntPtr cap, out UIntPtr needed);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern unsafe int zf_embed_tokens(ModelHandle model, ref zf_embed_params p, IntPtr* tokens,
                                                          UIntPtr* n_tokens, UIntPtr n, float* output, UIntPtr cap,
                                                          out UIntPtr needed);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern unsafe int zf_rerank(ModelHandle model, ref zf_embed_params p, byte* query, UIntPtr query_len,
                                                    IntPtr* docs, UIntPtr* doc_lens, UIntPtr n_docs, float* scores);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern unsafe int zf_session_logprobs(SessionHandle session, zf_token_logprob* logprobs,
                                                              UIntPtr cap, out UIntPtr n, out UIntPtr stride);
    
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern int zf_turn_params_init(ref zf_turn_params p, UIntPtr size);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern int zf_chat_turn_begin(SessionHandle session, ref zf_turn_params p, out IntPtr turn);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern int zf_chat_turn_next(TurnHandle turn, ref zf_turn_event e);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern int zf_chat_turn_message(TurnHandle turn, byte[] buf, UIntPtr cap, out UIntPtr needed);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern void zf_chat_turn_free(IntPtr turn);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern int zf_chat_turn(SessionHandle session, ref zf_turn_params p, zf_turn_cb cb, IntPtr user_data,
                                                out IntPtr turn);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)]
        internal static extern int zf_chat_turn_prompt(ModelHandle model, ref zf_turn_params p, byte[] buf, UIntPtr cap,
                                                       out UIntPtr needed);
    }
}

/**
 * @file zerfoo.h
 * @brief The zerfoo C ABI: load a GGUF model, tokenize, and stream generated text.
 *
 * Stability rules (see doc/abi.md): flat functions only, fixed-width integer types, no struct
 * passed or returned by value, every fallible call returns a ::zf_status, params structs start
 * with `struct_size` and are append-only. Once a function ships its signature never changes.
 *
 * Thread-safety: a ::zf_model is immutable after load and may be shared by any number of threads
 * and sessions. A ::zf_session is used by one thread at a time (it may move between threads);
 * zf_session_cancel() is safe from any thread at any time. zf_last_error() is per thread.
 */
#ifndef ZERFOO_H
#define ZERFOO_H

#include <stddef.h>
#include <stdint.h>

/** @def ZF_API
 * Marks the exported functions of the library (default visibility; dllexport/dllimport on
 * Windows). */
#if defined(_WIN32)
#  if defined(ZF_BUILDING_LIBRARY)
#    define ZF_API __declspec(dllexport)
#  else
#    define ZF_API __declspec(dllimport)
#  endif
#else
#  define ZF_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------------
 * Version
 * ------------------------------------------------------------------------------------------- */

/** Major version: bumped only on an ABI break (also the SONAME suffix). */
#define ZF_VERSION_MAJOR 0
/** Minor version: bumped when functions or params fields are appended. */
#define ZF_VERSION_MINOR 7
/** Patch version: bumped for fixes that change no interface. */
#define ZF_VERSION_PATCH 0
/** The header's version as one number: MAJOR*1000000 + MINOR*1000 + PATCH. */
#define ZF_VERSION (ZF_VERSION_MAJOR * 1000000 + ZF_VERSION_MINOR * 1000 + ZF_VERSION_PATCH)

/**
 * @brief The loaded library's version, encoded like ::ZF_VERSION.
 *
 * A binding is compatible when the major parts are equal and the runtime minor is >= the minor
 * of the header it was written for. Thread-safe; never fails.
 */
ZF_API uint32_t zf_version(void);

/**
 * @brief The loaded library's version as text, e.g. "0.4.0".
 * @return A static NUL-terminated string owned by the library; valid for the process lifetime.
 */
ZF_API const char* zf_version_string(void);

/* ---------------------------------------------------------------------------------------------
 * Status codes and errors
 * ------------------------------------------------------------------------------------------- */

/** Result of every fallible call. Open-ended: treat unknown nonzero values as a generic error. */
typedef int32_t zf_status;

#define ZF_OK 0                     /**< Success. */
#define ZF_ERR_INVALID_ARGUMENT 1   /**< A NULL handle, NULL pointer, or out-of-range value. */
#define ZF_ERR_IO 2                 /**< The file could not be opened, read or mapped. */
#define ZF_ERR_FORMAT 3             /**< The file is not a valid GGUF file (message says where). */
#define ZF_ERR_UNSUPPORTED 4        /**< Valid input the library does not support (arch, type). */
#define ZF_ERR_OUT_OF_MEMORY 5      /**< An allocation failed. */
#define ZF_ERR_BUFFER_TOO_SMALL 6   /**< Output buffer too small; `*needed` holds the size. */
#define ZF_ERR_NOT_FOUND 7          /**< A metadata key or token does not exist. */
#define ZF_ERR_INVALID_UTF8 8       /**< Input text is not valid UTF-8. */
#define ZF_ERR_CONTEXT_FULL 9       /**< The tokens do not fit in the session's context. */
#define ZF_ERR_CANCELLED 10         /**< A load was aborted by its progress callback. */
#define ZF_ERR_BACKEND 11           /**< The requested compute backend is unavailable or failed. */
#define ZF_ERR_INTERNAL 12          /**< A bug in zerfoo; the message has details. */
#define ZF_ERR_TEMPLATE 13          /**< A chat template failed (syntax, unknown filter, its own
                                         raise_exception, a limit); the message gives the
                                         template's line and column. */

/**
 * @brief The name of a status code, e.g. "ZF_ERR_FORMAT"; "ZF_ERR_UNKNOWN" for unknown values.
 * @return A static string; never NULL. Thread-safe.
 */
ZF_API const char* zf_status_string(zf_status status);

/**
 * @brief Describes the last failure on the calling thread.
 * @return A NUL-terminated string owned by the library, valid until the next zerfoo call on
 *         this thread; "" when the last call succeeded or no call failed yet. Never NULL.
 */
ZF_API const char* zf_last_error(void);

/* ---------------------------------------------------------------------------------------------
 * Logging
 * ------------------------------------------------------------------------------------------- */

#define ZF_LOG_DEBUG 0 /**< Verbose diagnostics. */
#define ZF_LOG_INFO 1  /**< Informational (e.g. which backend was chosen and why). */
#define ZF_LOG_WARN 2  /**< Something unusual that the library worked around. */
#define ZF_LOG_ERROR 3 /**< A failure (also reported through the status). */
#define ZF_LOG_NONE 4  /**< Threshold value that silences all logging. */

/**
 * @brief Log sink. `msg` is NUL-terminated, without trailing newline, valid only during the call.
 * The return value is ignored (reserved); return 0. May be called from any thread that calls
 * into zerfoo, so the callback must be thread-safe.
 */
typedef int32_t (*zf_log_cb)(void* user_data, int32_t level, const char* msg);

/**
 * @brief Routes library logs to `cb` (NULL restores the default: stderr). Process-wide.
 * Thread-safe, but messages already being delivered may still reach the previous sink.
 * @return ::ZF_OK.
 */
ZF_API zf_status zf_set_log_callback(zf_log_cb cb, void* user_data);

/**
 * @brief Sets the minimum level delivered (default ::ZF_LOG_WARN; the environment variable
 * ZF_LOG_LEVEL=debug|info|warn|error|none sets the initial value). Process-wide.
 * @return ::ZF_OK, or ::ZF_ERR_INVALID_ARGUMENT for a level outside DEBUG..NONE.
 */
ZF_API zf_status zf_set_log_level(int32_t level);

/* ---------------------------------------------------------------------------------------------
 * Backends
 * ------------------------------------------------------------------------------------------- */

#define ZF_DEVICE_AUTO 0 /**< The GPU if usable, else the CPU (the reason is logged at INFO). */
#define ZF_DEVICE_CPU 1  /**< The CPU engine. */
#define ZF_DEVICE_CUDA 2 /**< The CUDA engine; fails with ::ZF_ERR_BACKEND if unavailable. */

/**
 * @brief Checks whether a backend can run on this host.
 * @return ::ZF_OK if usable; ::ZF_ERR_BACKEND with the reason in zf_last_error() if not;
 *         ::ZF_ERR_INVALID_ARGUMENT for an unknown device value.
 */
ZF_API zf_status zf_backend_available(int32_t device);

/* ---------------------------------------------------------------------------------------------
 * Model
 * ------------------------------------------------------------------------------------------- */

/** Opaque model: immutable after load, shareable across threads and sessions. */
typedef struct zf_model zf_model;

/**
 * @brief Load progress. `progress` is in permille (0..1000). Return nonzero to abort the load,
 * which then fails with ::ZF_ERR_CANCELLED. Runs on the loading thread.
 */
typedef int32_t (*zf_progress_cb)(void* user_data, int32_t progress);

#define ZF_MODEL_VOCAB_ONLY 0x1u /**< Load only metadata and the tokenizer (no weights). */
#define ZF_MODEL_NO_MMAP 0x2u    /**< Read the file into memory instead of mapping it. */

/** Model load parameters. Initialize with zf_model_params_init(). */
typedef struct zf_model_params {
  uint32_t struct_size;      /**< sizeof(zf_model_params) as the caller compiled it. */
  int32_t device;            /**< ::ZF_DEVICE_AUTO (default), ::ZF_DEVICE_CPU, ::ZF_DEVICE_CUDA. */
  int32_t gpu_index;         /**< CUDA device ordinal (default 0). */
  int32_t n_threads;         /**< CPU threads used by sessions by default; 0 = physical cores. */
  uint32_t flags;            /**< ::ZF_MODEL_VOCAB_ONLY | ::ZF_MODEL_NO_MMAP. */
  uint32_t reserved0;        /**< Padding; must be 0. */
  zf_progress_cb progress;   /**< Optional load progress callback (NULL = none). */
  void* progress_user_data;  /**< Passed to `progress`. */
  /**
   * Batched decode (appended in 0.3): up to this many sessions of the model share each decode
   * step, reading the weights once for all of them; 0 or 1 = off (default), at most 64. When on,
   * zf_generate() / zf_session_eval() calls on different sessions from different threads are
   * coalesced by a per-model worker thread (continuous batching: prompts are evaluated in chunks
   * of 128 tokens between decode steps); each caller's thread still samples and receives its own
   * callbacks. A sequence's output does not depend on the other sequences in the batch (greedy
   * decoding gives the same tokens alone or among others). CPU engine only: on CUDA the value is
   * ignored (logged).
   */
  int32_t max_batch;
  uint32_t reserved1;        /**< Padding; must be 0. */
  /**
   * Prefix cache (appended in 0.4): the KV rows of full 64-token blocks that sessions of this
   * model evaluated are kept, keyed by the tokens of the block and of everything before it; a
   * session whose prompt continues its history with cached blocks copies them instead of
   * computing them (a shared system prompt is evaluated once for every session). Reuse is exact:
   * the logits are bit for bit those of evaluating the prompt (sessions without
   * ::ZF_SESSION_FAST_PREFILL take part). Least recently used blocks are dropped beyond this
   * many MiB. 0 = the default (256), -1 = off.
   */
  int32_t prefix_cache_mib;
  uint32_t reserved2;        /**< Padding; must be 0. */
} zf_model_params;

/**
 * @brief Fills `params` with defaults. `size` must be sizeof(zf_model_params) as compiled by
 * the caller (older, smaller layouts are accepted).
 * @return ::ZF_OK, or ::ZF_ERR_INVALID_ARGUMENT if params is NULL or size < 4.
 */
ZF_API zf_status zf_model_params_init(zf_model_params* params, size_t size);

/**
 * @brief Memory-maps and validates a GGUF file (v2/v3), builds its tokenizer and weights.
 * A split model (`NAME-00001-of-00003.gguf`, ... as llama-gguf-split and the converters write
 * them) is loaded from its first part; the other parts are found beside it by name.
 * @param path NUL-terminated UTF-8 file path.
 * @param params NULL for defaults.
 * @param out Receives the model, or NULL on failure. Free with zf_model_free().
 * @return ::ZF_OK; ::ZF_ERR_INVALID_ARGUMENT (NULL path/out); ::ZF_ERR_IO (cannot open/map);
 *         ::ZF_ERR_FORMAT (malformed file); ::ZF_ERR_UNSUPPORTED (architecture, tensor type);
 *         ::ZF_ERR_BACKEND (device=CUDA unavailable); ::ZF_ERR_CANCELLED; ::ZF_ERR_OUT_OF_MEMORY.
 */
ZF_API zf_status zf_model_load(const char* path, const zf_model_params* params, zf_model** out);

/**
 * @brief Releases the caller's reference to a model. NULL is a no-op. May be called from any
 * thread.
 *
 * Sessions hold their own reference (like SQLite's sqlite3_close_v2): when sessions of the model
 * are still alive, they keep working and the model's memory is released together with the last
 * of them (zf_session_free()), so bindings whose garbage collector frees in any order are safe.
 * After this call the caller must not pass `model` to any function again (not even to create a
 * session); it may keep using the sessions it has.
 */
ZF_API void zf_model_free(zf_model* model);

/** Facts about a loaded model, filled by zf_model_info(). Strings are owned by the model and
 * live as long as it. */
typedef struct zf_model_summary {
  uint32_t struct_size;        /**< sizeof(zf_model_summary) as the caller compiled it. */
  int32_t backend;             /**< Active device: ::ZF_DEVICE_CPU or ::ZF_DEVICE_CUDA. */
  const char* architecture;    /**< general.architecture, e.g. "llama", "gemma3". */
  const char* name;            /**< general.name or "". */
  const char* quant;           /**< Quantization mix (general.file_type, e.g. "Q4_K_M"), else the dominant layer type. */
  uint64_t n_params;           /**< Number of weight elements. */
  uint64_t file_size;          /**< Bytes in the GGUF file (every part of a split model). */
  int32_t n_ctx_train;         /**< Training context length. */
  int32_t n_vocab;             /**< Vocabulary size. */
  int32_t n_layer;             /**< Transformer blocks. */
  int32_t n_embd;              /**< Hidden size. */
  int32_t n_head;              /**< Attention heads. */
  int32_t n_head_kv;           /**< KV heads. */
  int32_t token_bos;           /**< Beginning-of-sequence id, or -1. */
  int32_t token_eos;           /**< End-of-sequence id, or -1. */
  int32_t token_eot;           /**< End-of-turn id, or -1. */
  int32_t n_tensors;           /**< Tensors in the file. */
  /** Fill-in-the-middle tokens (appended in 0.5), or -1: tokenizer.ggml.fim_pre/suf/mid/pad/
   *  rep/sep_token_id (or the older prefix/suffix/middle_token_id), else found by their text as
   *  llama.cpp does ("<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<PRE>", ...). A prompt
   *  [pre] prefix [suf] suffix [mid] asks for the middle; rep and sep frame repository files.
   *  A caller that gets back a smaller struct_size (an older library) has none of them. */
  int32_t token_fim_pre;
  int32_t token_fim_suf;       /**< See token_fim_pre. */
  int32_t token_fim_mid;       /**< See token_fim_pre. */
  int32_t token_fim_pad;       /**< See token_fim_pre. */
  int32_t token_fim_rep;       /**< See token_fim_pre. */
  int32_t token_fim_sep;       /**< See token_fim_pre. */
} zf_model_summary;

/**
 * @brief Fills `info` (set info->struct_size first). Fields beyond struct_size are not written;
 * on return info->struct_size is the size filled (the smaller of the caller's and the library's).
 * @return ::ZF_OK or ::ZF_ERR_INVALID_ARGUMENT (NULL model/info, struct_size too small).
 */
ZF_API zf_status zf_model_info(const zf_model* model, zf_model_summary* info);

/** The prefix cache's counters, filled by zf_model_cache_info() (appended in 0.4). */
typedef struct zf_cache_info {
  uint32_t struct_size;     /**< sizeof(zf_cache_info) as the caller compiled it. */
  int32_t block_tokens;     /**< Tokens per cached block (64); 0 when the cache is off. */
  uint64_t capacity_bytes;  /**< The bound (zf_model_params.prefix_cache_mib). */
  uint64_t bytes;           /**< KV bytes held now. */
  uint64_t blocks;          /**< Blocks held now (each once, however many sessions used it). */
  uint64_t hit_tokens;      /**< Prompt tokens copied from the cache instead of evaluated. */
  uint64_t stored_blocks;   /**< Blocks stored since load. */
  uint64_t evicted_blocks;  /**< Blocks dropped for the bound since load. */
  /** Block mappings alive now: a session reading a cached block's rows in place (its pages
   *  shared, copy-on-write) instead of holding a copy; a block in n sessions counts n times.
   *  0 where the system cannot share pages (then each session copies). Appended in 0.4. */
  uint64_t mapped_blocks;
} zf_cache_info;

/**
 * @brief Fills `info` with the model's prefix cache counters (set info->struct_size first).
 * Thread-safe.
 * @return ::ZF_OK or ::ZF_ERR_INVALID_ARGUMENT (NULL model/info, struct_size too small).
 */
ZF_API zf_status zf_model_cache_info(const zf_model* model, zf_cache_info* info);

/**
 * @brief Any GGUF metadata value as text (numbers in decimal, booleans as true/false,
 * arrays as JSON-like `[a, b, ...]`, strings verbatim). Thread-safe.
 * @param model The model.
 * @param key NUL-terminated metadata key, e.g. "general.name".
 * @param buf Output buffer (may be NULL when cap is 0); receives a NUL-terminated string.
 * @param cap Bytes available in `buf`.
 * @param needed Optional; receives the bytes required including the NUL.
 * @return ::ZF_OK; ::ZF_ERR_NOT_FOUND; ::ZF_ERR_BUFFER_TOO_SMALL; ::ZF_ERR_INVALID_ARGUMENT.
 */
ZF_API zf_status zf_model_meta(const zf_model* model, const char* key, char* buf, size_t cap,
                               size_t* needed);

/**
 * @brief The model architectures this library runs: the `general.architecture` values that
 * zf_model_load() accepts, comma-separated ("llama,mistral,gemma2,..."). Any other value loads
 * only with ::ZF_MODEL_VOCAB_ONLY (tokenizer and chat template) and otherwise fails with
 * ::ZF_ERR_UNSUPPORTED. Thread-safe; needs no model.
 * @param buf Output buffer (may be NULL when cap is 0); receives a NUL-terminated string.
 * @param cap Size of buf in bytes.
 * @param needed Optional; receives the bytes required including the NUL.
 * @return ::ZF_OK; ::ZF_ERR_BUFFER_TOO_SMALL.
 */
ZF_API zf_status zf_architectures(char* buf, size_t cap, size_t* needed);

/* ---------------------------------------------------------------------------------------------
 * Tokenizer
 * ------------------------------------------------------------------------------------------- */

#define ZF_TOKENIZE_ADD_SPECIAL 0x1u   /**< Add BOS/EOS as the model's metadata asks. */
#define ZF_TOKENIZE_PARSE_SPECIAL 0x2u /**< Match special-token text (e.g. "<eos>") as tokens. */

#define ZF_DETOKENIZE_REMOVE_SPECIAL 0x1u  /**< Drop BOS/EOS (leading/trailing) from the text. */
#define ZF_DETOKENIZE_RENDER_SPECIAL 0x2u  /**< Render control tokens' text (else skipped). */

/**
 * @brief Converts UTF-8 text to token ids. Thread-safe.
 * @param model The model (a ::ZF_MODEL_VOCAB_ONLY load suffices).
 * @param text UTF-8 text of `len` bytes (may be NULL when len is 0).
 * @param len Bytes of text.
 * @param flags ::ZF_TOKENIZE_ADD_SPECIAL | ::ZF_TOKENIZE_PARSE_SPECIAL; other bits are rejected.
 * @param tokens Output array (may be NULL when cap is 0).
 * @param cap Capacity of `tokens` in ids.
 * @param n Receives the number of tokens (also when the buffer is too small).
 * @return ::ZF_OK; ::ZF_ERR_BUFFER_TOO_SMALL (retry with *n); ::ZF_ERR_INVALID_UTF8;
 *         ::ZF_ERR_INVALID_ARGUMENT.
 */
ZF_API zf_status zf_tokenize(const zf_model* model, const char* text, size_t len, uint32_t flags,
                             int32_t* tokens, size_t cap, size_t* n);

/**
 * @brief Converts token ids to UTF-8 text (NUL-terminated). Thread-safe.
 * @return ::ZF_OK; ::ZF_ERR_BUFFER_TOO_SMALL (retry with *needed); ::ZF_ERR_INVALID_ARGUMENT
 *         (NULL model, or an id outside the vocabulary).
 */
ZF_API zf_status zf_detokenize(const zf_model* model, const int32_t* tokens, size_t n,
                               uint32_t flags, char* buf, size_t cap, size_t* needed);

/**
 * @brief The raw text of one token (may be a partial UTF-8 sequence for byte tokens), not
 * NUL-terminated. Control tokens render only with ::ZF_DETOKENIZE_RENDER_SPECIAL.
 * @param model The model.
 * @param token A token id in [0, n_vocab).
 * @param flags ::ZF_DETOKENIZE_RENDER_SPECIAL (::ZF_DETOKENIZE_REMOVE_SPECIAL is accepted and
 *        has no effect on one piece); other bits are rejected.
 * @param buf Output buffer (may be NULL when cap is 0).
 * @param cap Bytes available in `buf`.
 * @param needed Receives the number of bytes.
 * @return ::ZF_OK; ::ZF_ERR_BUFFER_TOO_SMALL; ::ZF_ERR_INVALID_ARGUMENT.
 */
ZF_API zf_status zf_token_to_piece(const zf_model* model, int32_t token, uint32_t flags,
                                   char* buf, size_t cap, size_t* needed);

/* ---------------------------------------------------------------------------------------------
 * Chat templates
 * ------------------------------------------------------------------------------------------- */

/** One chat turn. `role` is "system", "user" or "assistant"; both strings NUL-terminated. */
typedef struct zf_chat_message {
  const char* role;    /**< NUL-terminated UTF-8 role name. */
  const char* content; /**< NUL-terminated UTF-8 message text. */
} zf_chat_message;

#define ZF_CHAT_ADD_ASSISTANT 0x1u /**< Append the prefix that starts the assistant's turn. */

/**
 * @brief Renders messages with the model's `tokenizer.chat_template`, a Jinja template rendered
 * exactly as Python's jinja2 renders it in Hugging Face transformers' apply_chat_template
 * (variables: messages, add_generation_prompt, bos_token, eos_token; tools and documents are
 * None). A file without a template gets ChatML, or Gemma's turn format for gemma models.
 * NUL-terminated output. Thread-safe. For tool calls, other message fields, extra variables or
 * another template use zf_chat_apply_template_v2().
 * @return ::ZF_OK; ::ZF_ERR_BUFFER_TOO_SMALL; ::ZF_ERR_TEMPLATE (the template failed: message
 *         with line and column); ::ZF_ERR_INVALID_UTF8 (a role or content);
 *         ::ZF_ERR_INVALID_ARGUMENT.
 */
ZF_API zf_status zf_chat_apply_template(const zf_model* model, const zf_chat_message* msgs,
                                        size_t n_msgs, uint32_t flags, char* buf, size_t cap,
                                        size_t* needed);

/**
 * One chat turn with the fields chat templates read beyond role and content. Every string is
 * NUL-terminated UTF-8 and borrowed for the call; NULL leaves the field out of the message
 * (a template then sees it undefined), except `role`, which is required. In an array every
 * element has the same `struct_size` (the array's stride); set it to sizeof(zf_chat_message_v2).
 */
typedef struct zf_chat_message_v2 {
  uint32_t struct_size;          /**< sizeof(zf_chat_message_v2). */
  uint32_t reserved;             /**< Must be 0. */
  const char* role;              /**< "system", "user", "assistant", "tool", ... (required). */
  const char* content;           /**< The text; NULL gives the template `content` = None. */
  const char* reasoning_content; /**< The assistant's thinking (`reasoning_content`). */
  const char* tool_calls_json;   /**< `tool_calls`: a JSON array, e.g. [{"type":"function",
                                      "id":"call_1","function":{"name":"f","arguments":{...}}}]. */
  const char* tool_call_id;      /**< `tool_call_id` of a tool result message. */
  const char* name;              /**< `name` (the tool's name on a tool result message). */
  const char* extra_json;        /**< A JSON object whose keys are set on the message as they
                                      are: any other field a template reads, or content as a
                                      list of parts ({"content":[{"type":"text",...}]}). */
} zf_chat_message_v2;

#define ZF_CHAT_FIXED_TIME 0x2u /**< strftime_now uses zf_chat_params::time_unix (as UTC)
                                     instead of the local time now: reproducible output. */

/** Options of zf_chat_apply_template_v2(). Initialize with zf_chat_params_init(). */
typedef struct zf_chat_params {
  uint32_t struct_size;       /**< sizeof(zf_chat_params). */
  uint32_t flags;             /**< ::ZF_CHAT_ADD_ASSISTANT (add_generation_prompt),
                                   ::ZF_CHAT_FIXED_TIME (zf_chat_parse() also takes
                                   ::ZF_CHAT_PARSE_PARTIAL); other bits are rejected. */
  const char* template_name;  /**< NULL: `tokenizer.chat_template`; else the file's
                                   `tokenizer.chat_template.NAME` (e.g. "tool_use"). */
  const char* template_text;  /**< The caller's own Jinja template (overrides the file's and
                                   template_name); NULL for none. */
  const char* tools_json;     /**< `tools`: a JSON array of tool definitions; NULL = None. */
  const char* documents_json; /**< `documents`: a JSON array; NULL = None. */
  const char* extra_json;     /**< A JSON object of extra template variables, e.g.
                                   {"enable_thinking": false}; NULL for none. */
  int64_t time_unix;          /**< strftime_now's clock with ::ZF_CHAT_FIXED_TIME (seconds). */
} zf_chat_params;

/**
 * @brief Fills `params` with defaults (no flags, the file's template, no tools or extras).
 * @param params The struct to fill.
 * @param size sizeof(zf_chat_params) as the caller knows it.
 * @return ::ZF_OK, or ::ZF_ERR_INVALID_ARGUMENT if params is NULL or size < 4.
 */
ZF_API zf_status zf_chat_params_init(zf_chat_params* params, size_t size);

/**
 * @brief Renders a conversation with a chat template exactly as Python's jinja2 renders it in
 * Hugging Face transformers' apply_chat_template (ImmutableSandboxedEnvironment, trim_blocks,
 * lstrip_blocks, tojson without ASCII escaping, raise_exception, strftime_now, loop controls,
 * the generation block). Variables: messages (with the fields given), add_generation_prompt,
 * bos_token, eos_token (the model's), tools, documents, and the keys of params->extra_json.
 * A template cannot hang or exhaust the process: every string it builds (64 MiB), loop
 * iterations + macro calls + copying (10 million steps, one per 256 bytes copied), list length
 * (2^20), recursion and nesting are bounded, and exceeding one fails naming the limit.
 * NUL-terminated output. Thread-safe.
 * @param model The model (its template, BOS/EOS text).
 * @param msgs The conversation; the first element's struct_size is the array's stride.
 * @param n_msgs Number of messages (may be 0).
 * @param params NULL for defaults.
 * @param buf Output buffer (may be NULL when cap is 0).
 * @param cap Size of `buf` in bytes.
 * @param needed Optional; receives the bytes required including the NUL.
 * @return ::ZF_OK; ::ZF_ERR_BUFFER_TOO_SMALL (retry with *needed); ::ZF_ERR_TEMPLATE (syntax
 *         error, unknown filter or test, the template's raise_exception, a limit: the message
 *         gives the line and column); ::ZF_ERR_NOT_FOUND (no such template_name);
 *         ::ZF_ERR_INVALID_ARGUMENT (NULL model or role, a struct_size that differs between
 *         messages or is too small, nonzero reserved, unknown flag bits, malformed JSON or a
 *         string that is not UTF-8: the message names the field).
 */
ZF_API zf_status zf_chat_apply_template_v2(const zf_model* model, const zf_chat_message_v2* msgs,
                                           size_t n_msgs, const zf_chat_params* params, char* buf,
                                           size_t cap, size_t* needed);

#define ZF_CHAT_PARSE_PARTIAL 0x4u /**< zf_chat_parse(): the text is the turn so far (streaming). */
#define ZF_CHAT_ONE_CALL 0x8u /**< zf_chat_tool_grammar(): exactly one call (no parallel calls). */

/**
 * @brief Parses what a model generated for one assistant turn back into an OpenAI assistant
 * message: content, reasoning and tool calls, in the format of the chat template that prompted
 * it. The template's markers are derived from the template itself (it renders probe turns with
 * reasoning and one and two tool calls, and the differences locate each marker), so any
 * template that renders `tool_calls` and `reasoning_content` is understood without a parser
 * per model family: Hermes / Qwen `<tool_call>` JSON, Qwen3-Coder's XML parameters, Llama 3.x
 * JSON, Mistral `[TOOL_CALLS]`, Granite, SmolLM3, Phi-4-mini, DeepSeek, Command R, Functionary,
 * ... For templates that render no tool calls (Gemma), a reply that is only a JSON object
 * `{"name", "arguments"|"parameters"}` (or a list of them, or `{"tool_calls": [...]}`,
 * optionally in a ```json fence) naming an offered tool is a call. Reasoning is the text between
 * the template's markers (think tags and the like), also when the generation prompt opened
 * them (then a turn that never closes them is all reasoning); whitespace around content and
 * reasoning is trimmed where markers or calls were read out of the text, at the start of content
 * only where something was read out before it (reasoning, a header: a stream's first words
 * stand); a text without any is returned as it is. Markers and arguments are matched leniently
 * about whitespace. A call whose JSON arguments began is a call (a stream has sent it): its
 * `arguments` are the object's text as the model wrote it, valid JSON or not, cut short where
 * generation stopped inside it, and it ends after them where what follows does not match. The
 * derived format is cached per template and extra variables. Thread-safe.
 *
 * Output (NUL-terminated JSON): `{"role":"assistant","content":string|null,
 * "reasoning_content":string (only when the text has reasoning),"tool_calls":[{"id","type":
 * "function","function":{"name","arguments": a JSON string}}] (only when it calls tools)}`.
 * `content` is null when the turn is only tool calls. Call ids are the ones the model wrote where
 * the format has them, else `call_` + 16 hex digits derived from the text.
 * Invariant: a message rendered by the template (zf_chat_apply_template_v2) and its assistant
 * turn's text parsed here give back the message's content, reasoning, tool names and (JSON-equal)
 * arguments.
 *
 * Streaming: with ::ZF_CHAT_PARSE_PARTIAL in params->flags the text is the turn so far. Text
 * that may still become a marker or a call is held back, reasoning not yet closed is reasoning,
 * and the last call listed may be one still arriving: listed once its name is written (with its
 * final id), its `arguments` are what can be said so far, a prefix of its final arguments (for
 * formats with JSON arguments the text as generated; for XML-style parameters the JSON of the
 * parameters read so far, a string value growing as it arrives). Each field of a later parse
 * extends the earlier one (content, reasoning and a call's arguments grow at their end, calls
 * are appended with the same ids), so a caller re-parses the growing text after each
 * piece and sends the differences as deltas: a call's argument fragments add up to exactly the
 * final arguments string.
 * @param model The model (its chat template unless params names another).
 * @param text The generated text: what follows the template's generation prompt, without the
 *        end-of-turn token. May contain NUL; need not be NUL-terminated.
 * @param len Bytes in `text`.
 * @param params NULL for defaults. `flags`: ::ZF_CHAT_PARSE_PARTIAL (other bits of
 *        zf_chat_apply_template_v2() are accepted and ignored). `template_name` / `template_text`
 *        pick the template as in zf_chat_apply_template_v2(); `tools_json` lists the offered
 *        tools (their parameter types decide how text-valued arguments are read; the JSON
 *        fallback accepts only their names); `extra_json` holds the variables the prompt was
 *        rendered with (e.g. {"enable_thinking": true}: whether the generation prompt opens
 *        reasoning).
 * @param buf Output buffer (may be NULL when cap is 0).
 * @param cap Size of `buf` in bytes.
 * @param needed Optional; receives the bytes required including the NUL.
 * @return ::ZF_OK; ::ZF_ERR_BUFFER_TOO_SMALL (retry with *needed); ::ZF_ERR_INVALID_UTF8 (text);
 *         ::ZF_ERR_NOT_FOUND (no such template_name); ::ZF_ERR_INVALID_ARGUMENT (NULL model,
 *         NULL text with len > 0, unknown flag bits, a struct_size too small, malformed
 *         tools_json or extra_json: the message names the field).
 */
ZF_API zf_status zf_chat_parse(const zf_model* model, const char* text, size_t len,
                               const zf_chat_params* params, char* buf, size_t cap,
                               size_t* needed);

/**
 * @brief The grammar of an assistant turn that is only tool calls, in the chat template's own
 * call format (derived as zf_chat_parse() derives it), each call's arguments valid for its
 * tool's `parameters` JSON schema (closed unless it sets additionalProperties): the constraint
 * for OpenAI's tool_choice "required" or a named function (offer only that tool), and, lazily
 * (zf_generate_params::constraint_trigger), for "auto": free text until the model opens a call,
 * then a valid call (XML-style parameters: one element per parameter in the schema's order,
 * the required ones always). Templates without a derived call format get the generic JSON form
 * zf_chat_parse() reads for every template, a list of {"name","arguments"} objects. Thread-safe.
 *
 * Output (NUL-terminated JSON): `{"grammar": a Lark grammar for ::ZF_CONSTRAINT_LARK of the
 * whole turn, "lazy_grammar": the grammar of the output from the trigger on, "trigger": the
 * text that opens a call (generate with lazy_grammar and this trigger), "native": whether the
 * template's own format is used}`; trigger and lazy_grammar are "" where the format has no
 * opening text (the generic form, calls opened by the generation prompt).
 * @param model The model (its chat template unless params names another).
 * @param params Required: `tools_json` (a non-empty JSON array of tools with function names);
 *        `template_name` / `template_text` / `extra_json` as in zf_chat_parse(); flags:
 *        ::ZF_CHAT_ONE_CALL (one call; else up to 8), the flags of zf_chat_parse() are
 *        accepted and ignored.
 * @param buf Output buffer (may be NULL when cap is 0).
 * @param cap Size of `buf` in bytes.
 * @param needed Optional; receives the bytes required including the NUL.
 * @return ::ZF_OK; ::ZF_ERR_BUFFER_TOO_SMALL (retry with *needed); ::ZF_ERR_NOT_FOUND (no such
 *         template_name); ::ZF_ERR_INVALID_ARGUMENT (NULL model or params, no tools, a tool
 *         without a function name or with parameters that are not an object, malformed JSON,
 *         unknown flag bits: the message names the field).
 */
ZF_API zf_status zf_chat_tool_grammar(const zf_model* model, const zf_chat_params* params, char* buf, size_t cap,
                                      size_t* needed);

/* ---------------------------------------------------------------------------------------------
 * Sessions
 * ------------------------------------------------------------------------------------------- */

/** Opaque session: KV cache + sampler state for one conversation. One thread at a time. */
typedef struct zf_session zf_session;

#define ZF_KV_F32 0 /**< KV cache in 32-bit floats. */
#define ZF_KV_F16 1 /**< KV cache in 16-bit floats (default). */
/** KV cache in ggml's Q8_0 blocks (32 int8 + an F16 scale: 8.5 bits per element; 0.7). Needs head
 * sizes that are a multiple of 32 and the CPU engine (otherwise ::ZF_ERR_UNSUPPORTED). */
#define ZF_KV_Q8_0 2
/** KV cache in ggml's Q4_0 blocks (32 4-bit + an F16 scale: 4.5 bits per element; 0.7); as ::ZF_KV_Q8_0. */
#define ZF_KV_Q4_0 3
/** zf_session_params.kv_type_v: V's cache type is kv_type's (0.7). */
#define ZF_KV_SAME (-1)

/**
 * Prefill with the fastest kernels instead of the exact ones. By default a session evaluates a
 * prompt so that every position's logits are bit for bit the same however the prompt arrives
 * (in one call, in pieces, one token at a time, after a prefix copied from the model's prefix
 * cache, batched with other sessions). With this flag prompts of 8 tokens or more use the
 * multi-token kernels (faster prefill, doc/state.md), whose results differ from the
 * one-token path in the last bits; such a session neither reads nor fills the prefix cache.
 */
#define ZF_SESSION_FAST_PREFILL 0x1u

/** Session parameters. Initialize with zf_session_params_init(). */
typedef struct zf_session_params {
  uint32_t struct_size; /**< sizeof(zf_session_params) as the caller compiled it. */
  int32_t n_ctx;        /**< Context length in tokens; 0 = min(training context, 4096). */
  int32_t n_threads;    /**< CPU threads; 0 = the model's default. */
  int32_t kv_type;      /**< K's (and by default V's) cache type: ::ZF_KV_F16 (default), ::ZF_KV_F32,
                             ::ZF_KV_Q8_0 or ::ZF_KV_Q4_0. */
  uint32_t flags;       /**< ::ZF_SESSION_FAST_PREFILL (appended in 0.4; default 0). */
  uint32_t reserved0;   /**< Padding; must be 0. */
  /** V's cache type when it differs from K's (llama.cpp's -ctv; V tolerates quantization less
   * than K in some models): a ::ZF_KV_F16 .. ::ZF_KV_Q4_0 value, or ::ZF_KV_SAME (default) for
   * kv_type's. Appended in 0.7, so a caller compiled against an older header gets V = K. */
  int32_t kv_type_v;
  uint32_t reserved1;   /**< Padding; must be 0 (appended in 0.7). */
} zf_session_params;

/** @brief Fills defaults; see zf_model_params_init(). */
ZF_API zf_status zf_session_params_init(zf_session_params* params, size_t size);

/**
 * @brief Creates a session on a model. The session holds a reference to the model, which
 * therefore stays alive until the session is freed, even after zf_model_free().
 * @return ::ZF_OK; ::ZF_ERR_INVALID_ARGUMENT (NULL model/out, negative n_ctx, model loaded with
 *         ::ZF_MODEL_VOCAB_ONLY); ::ZF_ERR_OUT_OF_MEMORY.
 */
ZF_API zf_status zf_session_create(zf_model* model, const zf_session_params* params,
                                   zf_session** out);

/** @brief Frees a session. NULL is a no-op. Not concurrently with a call using the session. */
ZF_API void zf_session_free(zf_session* session);

/** @brief Clears the KV cache and history; the next generate starts a new conversation.
 * @return ::ZF_OK; ::ZF_ERR_INVALID_ARGUMENT (NULL session, or a zf_generation in progress). */
ZF_API zf_status zf_session_reset(zf_session* session);

/**
 * @brief Asks a running zf_generate()/zf_session_eval() on this session to stop at the next
 * token boundary. Safe from any thread at any time (including signal-free async contexts).
 * The request is consumed by the call it stops; a cancel with no call running makes the next
 * call stop at once.
 * @return ::ZF_OK or ::ZF_ERR_INVALID_ARGUMENT (NULL session).
 */
ZF_API zf_status zf_session_cancel(zf_session* session);

/**
 * @brief Number of tokens currently in the session's KV cache.
 * @return ::ZF_OK or ::ZF_ERR_INVALID_ARGUMENT.
 */
ZF_API zf_status zf_session_n_past(const zf_session* session, int32_t* n_past);

/**
 * @brief Appends tokens to the KV cache and writes the last position's logits (n_vocab
 * floats) into `logits` (may be NULL when cap is 0 to only extend the cache).
 * @return ::ZF_OK; ::ZF_ERR_CONTEXT_FULL (nothing appended); ::ZF_ERR_BUFFER_TOO_SMALL
 *         (0 < cap < n_vocab; nothing appended); ::ZF_ERR_CANCELLED; ::ZF_ERR_INVALID_ARGUMENT
 *         (also while a zf_generation is in progress on the session).
 */
ZF_API zf_status zf_session_eval(zf_session* session, const int32_t* tokens, size_t n,
                                 float* logits, size_t cap);

/* ---------------------------------------------------------------------------------------------
 * Generation
 * ------------------------------------------------------------------------------------------- */

/**
 * @brief Receives each piece of generated text. `piece` holds `len` bytes of whole UTF-8
 * characters (not NUL-terminated), valid only during the call; `token` is the id that completed
 * it. Return 0 to continue, nonzero to stop (stop reason ::ZF_STOP_CALLBACK).
 */
typedef int32_t (*zf_stream_cb)(void* user_data, const char* piece, size_t len, int32_t token);

#define ZF_GENERATE_NO_SPECIAL 0x1u       /**< Don't add BOS/special tokens to the prompt. */
#define ZF_GENERATE_NO_PARSE_SPECIAL 0x2u /**< Treat special-token text in the prompt as text. */
#define ZF_GENERATE_IGNORE_EOS 0x4u       /**< Keep generating past EOS/EOT. */

/** Generation parameters. Initialize with zf_generate_params_init(). */
typedef struct zf_generate_params {
  uint32_t struct_size;     /**< sizeof(zf_generate_params) as the caller compiled it. */
  int32_t max_tokens;       /**< Tokens to generate at most (default 256; <0 = until full). */
  float temperature;        /**< 0 = greedy (default 0.8). */
  int32_t top_k;            /**< Keep the k most likely (default 40; 0 = off). */
  float top_p;              /**< Nucleus threshold (default 0.95; 1 = off). */
  float min_p;              /**< Drop below min_p * p(max) (default 0.05; 0 = off). */
  float repeat_penalty;     /**< >1 penalizes repeats (default 1.0 = off). */
  int32_t repeat_last_n;    /**< Window for the penalty (default 64). */
  uint32_t flags;           /**< ZF_GENERATE_* flags (default 0). */
  uint32_t reserved0;       /**< Padding; must be 0. */
  uint64_t seed;            /**< RNG seed (default 0xFFFFFFFFFFFFFFFF = random). */
  const char* const* stop;  /**< Stop strings (UTF-8, NUL-terminated); never emitted. */
  size_t n_stop;            /**< Number of stop strings. */
  int32_t n_logprobs;       /**< Since 0.3: 0 = off (default); 1..::ZF_MAX_LOGPROBS = report each
                                 generated token's log-probability and this many most likely
                                 alternatives through zf_session_logprobs(). */
  uint32_t reserved1;       /**< Padding; must be 0. */
  const char* constraint;   /**< Since 0.3: constrained decoding (doc/constraints.md): the text
                                 the output must match, NUL-terminated UTF-8, read during
                                 zf_generate() / zf_generate_begin() only; its meaning is given by
                                 constraint_kind. NULL (default) = unconstrained. */
  int32_t constraint_kind;  /**< Since 0.3: ZF_CONSTRAINT_* (default ::ZF_CONSTRAINT_NONE). */
  uint32_t reserved2;       /**< Padding; must be 0. */
  const char* constraint_trigger; /**< Since 0.4: with a constraint, NULL (default) applies it from
                                 the first token; else a lazy constraint: the output is free until
                                 this text (NUL-terminated UTF-8) first appears in it, and from
                                 where it starts the rest of the output must match the constraint
                                 (e.g. a tool-call grammar triggered by the format's opening
                                 marker, see zf_chat_tool_grammar()). */
  /**
   * Since 0.4: speculative decoding by prompt lookup (llama.cpp's lookup decoding): at each step
   * up to this many tokens are drafted from the latest earlier occurrence of the text's last
   * 2-4 tokens in the prompt and output, evaluated in one pass over the weights with every
   * position's logits, and the next tokens are sampled from those logits exactly as without
   * drafts; drafted tokens the sampler picks are kept, the rest rolled back. The output is token
   * for token the output without it (greedy, and sampled with a seed); it pays off when the
   * answer repeats the prompt (code edits, quotes, extraction, reformatting). The draft length
   * adapts to the acceptance and drafting pauses when drafts keep failing. 0 (default) = off;
   * at most ::ZF_MAX_DRAFT. Ignored on sessions that cannot verify drafts
   * (::ZF_SESSION_FAST_PREFILL, the CUDA engine); on a batched model (zf_model_params.max_batch,
   * since 0.4) drafts are verified inside the shared decode steps, beside the other
   * sessions' tokens. On a session with
   * a draft model (zf_session_set_draft_model(), since 0.4) the drafts come from that model
   * instead of prompt lookup, with the same verification and the same adaptive length.
   */
  int32_t draft_max;
  int32_t draft_min; /**< Since 0.4: fewer tokens found than this: no draft this step (0 = 1). */
} zf_generate_params;

/** Most tokens zf_generate_params.draft_max may draft per step. */
#define ZF_MAX_DRAFT 16

/** Most alternatives zf_generate_params.n_logprobs may ask for per token. */
#define ZF_MAX_LOGPROBS 20

/**
 * @name Constraint kinds (zf_generate_params.constraint_kind, since 0.3)
 * With a constraint, the generated text is exactly a string the constraint accepts: tokens
 * that cannot continue it are never sampled (greedy included), an end token is allowed only
 * once the text is complete, and generation ends with ::ZF_STOP_EOS when the text is complete
 * and nothing may follow (or the model picks an allowed end token; also with
 * ::ZF_GENERATE_IGNORE_EOS). ::ZF_STOP_MAX_TOKENS and the other stop reasons can still cut the
 * text short. Stop strings apply as usual. The constraint is compiled before the prompt is
 * evaluated: an invalid one fails with ::ZF_ERR_INVALID_ARGUMENT and the compiler's message in
 * zf_last_error(), with nothing evaluated or generated; a library built without constraints
 * (no Rust toolchain at build time) fails with ::ZF_ERR_UNSUPPORTED. The matching engine is
 * llguidance. GBNF grammars are not supported (use ::ZF_CONSTRAINT_LARK).
 * @{
 */
#define ZF_CONSTRAINT_NONE 0        /**< No constraint; `constraint` must be NULL. */
#define ZF_CONSTRAINT_JSON_SCHEMA 1 /**< A JSON schema (llguidance's JSON Schema subset). */
#define ZF_CONSTRAINT_REGEX 2       /**< A regular expression (Rust regex syntax) matching the
                                         whole output. */
#define ZF_CONSTRAINT_CHOICE 3      /**< A non-empty JSON array of strings: the output is one of
                                         them, verbatim. */
#define ZF_CONSTRAINT_LARK 4        /**< A Lark grammar (llguidance's dialect; `start` rule). */
/** @} */

/**
 * @brief Compiles a constraint for `model`'s vocabulary and discards it: the check
 * zf_generate() makes before evaluating anything, for callers (servers) that must answer a bad
 * schema, regex, grammar or choice list before they commit a session to a request. Thread-safe.
 * @param model The model whose vocabulary the constraint is compiled for.
 * @param kind ZF_CONSTRAINT_JSON_SCHEMA, _REGEX, _CHOICE or _LARK.
 * @param constraint NUL-terminated UTF-8 text of that kind.
 * @return ::ZF_OK; ::ZF_ERR_INVALID_ARGUMENT (NULL model or constraint, an unknown kind, an
 *         invalid constraint: the compiler's message); ::ZF_ERR_UNSUPPORTED (a library built
 *         without constraints).
 */
ZF_API zf_status zf_constraint_check(const zf_model* model, int32_t kind, const char* constraint);

/** @brief Fills defaults; see zf_model_params_init(). */
ZF_API zf_status zf_generate_params_init(zf_generate_params* params, size_t size);

#define ZF_STOP_EOS 0          /**< The model produced EOS/EOT. */
#define ZF_STOP_MAX_TOKENS 1   /**< max_tokens reached. */
#define ZF_STOP_STRING 2       /**< A stop string matched (not emitted). */
#define ZF_STOP_CALLBACK 3     /**< The stream callback returned nonzero. */
#define ZF_STOP_CANCELLED 4    /**< zf_session_cancel() was called. */
#define ZF_STOP_CONTEXT_FULL 5 /**< The context filled up. */

/** Outcome of zf_generate(). */
typedef struct zf_generate_result {
  uint32_t struct_size;   /**< sizeof(zf_generate_result) as the caller compiled it. */
  int32_t stop_reason;    /**< ZF_STOP_*. */
  int32_t n_prompt;       /**< Prompt tokens evaluated by this call. */
  int32_t n_generated;    /**< Tokens sampled by this call. */
  double prompt_ms;       /**< Prefill wall time. */
  double decode_ms;       /**< Decode wall time (sampling and evaluation; since 0.2 without the
                               time spent in the stream callback or between zf_generation_next
                               calls). */
  int32_t n_drafted;      /**< Since 0.4: tokens drafted (zf_generate_params.draft_max). */
  int32_t n_accepted;     /**< Since 0.4: drafted tokens kept (each spared a decode step). */
} zf_generate_result;

/**
 * @brief Evaluates the prompt, then samples tokens and streams their text to `cb` until a stop
 * condition. A second call on the same session continues the conversation (the KV cache is
 * reused) unless zf_session_reset() was called. A prompt that does not fit the remaining
 * context fails with ::ZF_ERR_CONTEXT_FULL before anything is evaluated; filling up during
 * decode ends with ::ZF_STOP_CONTEXT_FULL and ::ZF_OK. Control tokens add no text, except (since
 * 0.4) the markers the model's own chat template writes its turns with (gpt-oss's harmony
 * headers, Llama's <|python_tag|>, a call block's opener) and those a constraint's grammar
 * references: zf_chat_parse reads the turn by them.
 * @param session The session (one thread at a time).
 * @param prompt UTF-8 text of `len` bytes (may be empty to continue generating).
 * @param len Bytes of prompt.
 * @param params NULL for defaults.
 * @param cb May be NULL (text is then only counted).
 * @param user_data Passed to `cb`.
 * @param out May be NULL; set out->struct_size first.
 * @return ::ZF_OK (also when stopped by callback, cancel, stop string, EOS, max tokens);
 *         ::ZF_ERR_INVALID_UTF8; ::ZF_ERR_CONTEXT_FULL; ::ZF_ERR_INVALID_ARGUMENT (also for
 *         unknown flag bits, a nonzero reserved0, reserved1 or reserved2, n_logprobs outside
 *         0..::ZF_MAX_LOGPROBS, an unknown constraint_kind or one that disagrees with
 *         `constraint` being NULL, an invalid constraint (the compiler's message), or a
 *         zf_generation in progress on the session); ::ZF_ERR_UNSUPPORTED (a constraint, in a
 *         library built without constraints).
 */
ZF_API zf_status zf_generate(zf_session* session, const char* prompt, size_t len,
                             const zf_generate_params* params, zf_stream_cb cb, void* user_data,
                             zf_generate_result* out);


/* ---------------------------------------------------------------------------------------------
 * Pull-style generation (since 0.2)
 * ------------------------------------------------------------------------------------------- */

/**
 * Opaque generation in progress: the pull-style counterpart of zf_generate(), for iterators
 * that ask for the next piece instead of receiving callbacks. Both run the same generation loop
 * and give the same output for the same session state and params.
 *
 * Ownership and thread-safety: created by zf_generate_begin() on a session, freed by
 * zf_generation_free(). It is used by one thread at a time, like its session (it may move
 * between threads). While it is in progress (begun, not yet done) the session accepts no other
 * call (zf_generate, zf_generate_begin, zf_session_eval, zf_session_reset fail with
 * ::ZF_ERR_INVALID_ARGUMENT) except zf_session_cancel(), zf_session_n_past(),
 * zf_session_logprobs() and zf_session_free(). The generation keeps its session's memory alive: the two may be freed in
 * either order (the session is then unusable, but freeing the generation stays valid).
 */
typedef struct zf_generation zf_generation;

/**
 * @brief Starts a generation: tokenizes the prompt and evaluates it (the prefill runs here,
 * not in the first zf_generation_next(), so prompt errors surface at once). Prompt rules,
 * params and conversation continuation are exactly those of zf_generate().
 * @param session The session to generate on.
 * @param prompt UTF-8 text of `len` bytes (may be NULL when len is 0, to continue generating).
 * @param len Bytes of `prompt`.
 * @param params NULL for defaults.
 * @param out Receives the generation, or NULL on failure. Free with zf_generation_free().
 * @return ::ZF_OK (also when a zf_session_cancel() stops the prefill: the generation is then
 *         already done with ::ZF_STOP_CANCELLED); ::ZF_ERR_INVALID_UTF8; ::ZF_ERR_CONTEXT_FULL
 *         (nothing evaluated); ::ZF_ERR_INVALID_ARGUMENT (NULL session/out, bad params, an
 *         invalid constraint (nothing evaluated), empty prompt with nothing to continue from,
 *         another generation in progress on the session); ::ZF_ERR_UNSUPPORTED (a constraint,
 *         in a library built without constraints); ::ZF_ERR_OUT_OF_MEMORY.
 */
ZF_API zf_status zf_generate_begin(zf_session* session, const char* prompt, size_t len,
                                   const zf_generate_params* params, zf_generation** out);

/**
 * @brief Produces the next piece of text: samples and evaluates tokens until one piece of whole
 * UTF-8 characters is ready (the piece a ::zf_stream_cb would receive), or the generation ends.
 *
 * On ::ZF_OK with `*done == 0`, `buf` holds `*len` bytes (not NUL-terminated) and `*token` is
 * the id that completed the piece. On ::ZF_OK with `*done == 1` the generation has ended
 * (`*len` is 0; the stop reason is in zf_generation_result()) and every later call does the
 * same. On ::ZF_ERR_BUFFER_TOO_SMALL `*len` holds the piece's size and nothing is lost: the
 * next call returns the same piece (a 64-byte buffer fits almost every piece). A pending
 * zf_session_cancel() ends the generation with ::ZF_STOP_CANCELLED at the next token boundary.
 * The token that completed a piece is evaluated by the following call, so stopping after any
 * piece (zf_generation_free()) leaves it to be evaluated first by the session's next call, as
 * when a ::zf_stream_cb stops zf_generate().
 * @param gen The generation.
 * @param buf Output buffer (may be NULL when cap is 0).
 * @param cap Size of `buf` in bytes.
 * @param len Receives the piece's size in bytes. Required.
 * @param token Optional; receives the token id (-1 when done).
 * @param done Receives 1 when the generation has ended, else 0. Required.
 * @return ::ZF_OK; ::ZF_ERR_BUFFER_TOO_SMALL; ::ZF_ERR_INVALID_ARGUMENT (NULL generation, len
 *         or done, NULL buf with cap > 0, or the session was freed); ::ZF_ERR_OUT_OF_MEMORY,
 *         ::ZF_ERR_INTERNAL or ::ZF_ERR_BACKEND when the engine fails (the generation is then
 *         done).
 */
ZF_API zf_status zf_generation_next(zf_generation* gen, char* buf, size_t cap, size_t* len,
                                    int32_t* token, int32_t* done);

/**
 * @brief The outcome of a generation, as zf_generate() reports it: set out->struct_size
 * first; fields beyond it are not written. The counts and times are those so far; the stop
 * reason is meaningful once zf_generation_next() reported done (before that it reads
 * ::ZF_STOP_EOS). `decode_ms` counts only the time spent inside zf_generation_next().
 * Thread-safety: as the generation (not concurrently with zf_generation_next()).
 * @return ::ZF_OK or ::ZF_ERR_INVALID_ARGUMENT (NULL gen/out, struct_size too small).
 */
ZF_API zf_status zf_generation_result(const zf_generation* gen, zf_generate_result* out);

/**
 * @brief Frees a generation. NULL is a no-op. If it was still in progress it stops as if a
 * ::zf_stream_cb returned nonzero (::ZF_STOP_CALLBACK): the KV cache keeps what was evaluated,
 * the last piece's token is evaluated by the session's next call, and the session can continue
 * the conversation or be reset. May be called from any thread, but not concurrently with a
 * call using the same session.
 */
ZF_API void zf_generation_free(zf_generation* gen);

/* ---------------------------------------------------------------------------------------------
 * Token log-probabilities (since 0.3)
 * ------------------------------------------------------------------------------------------- */

/** A token id and its log-probability (natural log). */
typedef struct zf_token_logprob {
  int32_t token;   /**< Token id. */
  float logprob;   /**< ln p(token); -INFINITY for a token the model rules out. */
} zf_token_logprob;

/**
 * @brief The log-probabilities behind the piece of text delivered last, when the generation
 * asked for them (zf_generate_params.n_logprobs > 0).
 *
 * Values are the log-softmax of the model's raw logits at the token's position: before the
 * repetition penalty, temperature and the top-k/top-p/min-p filters (the distribution the
 * model predicts, not the one the sampler drew from). Per token, `*stride` entries (1 +
 * min(n_logprobs, vocabulary size)): first the generated token itself, then the most likely
 * tokens in descending order of log-probability, ties to the lower id (the generated token
 * appears among them too when it is one of them). Greedy decoding picks the first alternative.
 *
 * A piece of text may complete more than one token (a character split over byte tokens, text
 * held back while it could begin a stop string): the piece carries every token sampled since
 * the previous piece, in order, its own token (the one passed to the ::zf_stream_cb or
 * returned by zf_generation_next()) last. So the tokens of all pieces, in order, are exactly the
 * generated tokens whose text was delivered; an EOS/EOT token, and tokens whose text a
 * matched stop string swallowed, belong to no piece and are not reported.
 *
 * Valid inside a ::zf_stream_cb (for the piece it receives) and after a zf_generation_next()
 * that returned a piece (the same piece again after ::ZF_ERR_BUFFER_TOO_SMALL), until the
 * next piece, the end of the generation or the next call that starts one. Empty (`*n == 0`)
 * before any piece, after the generation ended, and when n_logprobs is 0.
 * Thread-safety: as the session; it may be called while a zf_generation is in progress on it.
 * @param session The session.
 * @param out Output array (may be NULL when cap is 0).
 * @param cap Capacity of `out` in entries.
 * @param n Receives the number of entries (tokens * stride). Required.
 * @param stride Optional; receives the entries per token (0 when logprobs are off).
 * @return ::ZF_OK; ::ZF_ERR_BUFFER_TOO_SMALL (`*n` says how many; nothing is lost, call again);
 *         ::ZF_ERR_INVALID_ARGUMENT (NULL session or n, NULL out with cap > 0).
 */
ZF_API zf_status zf_session_logprobs(const zf_session* session, zf_token_logprob* out, size_t cap, size_t* n,
                                     size_t* stride);

/* ---------------------------------------------------------------------------------------------
 * Prompt reuse and session state (since 0.2)
 * ------------------------------------------------------------------------------------------- */

/**
 * @brief The session's conversation as its next call sees it: the tokens in its KV cache, then
 * the pending ones (a token already shown by a generation that stopped early, evaluated first
 * by the next call). With zf_session_truncate() a server keeps the prefix a new prompt shares
 * with a session and evaluates only the rest (prompt caching).
 * @param session The session (not concurrently with a call using it).
 * @param tokens Output array (may be NULL when cap is 0).
 * @param cap Capacity of `tokens` in ids.
 * @param n Receives the number of tokens. Required.
 * @return ::ZF_OK; ::ZF_ERR_BUFFER_TOO_SMALL (`*n` says how many); ::ZF_ERR_INVALID_ARGUMENT.
 */
ZF_API zf_status zf_session_tokens(const zf_session* session, int32_t* tokens, size_t cap, size_t* n);

/**
 * @brief Keeps the first `n_keep` tokens of the conversation (zf_session_tokens()) and forgets
 * the rest: the next call continues after them, so a prompt that starts with them is evaluated
 * from there on. `n_keep == 0` is zf_session_reset(). On a model with recurrent layers (LFM2,
 * Granite 4.0 hybrid, Qwen 3.5) the state at `n_keep` is rebuilt exactly: from the nearest
 * checkpoint (every 64 tokens over the last 256, sparser before; doc/state.md) the kept tokens
 * after it are evaluated again, which takes that much prefill and may end with
 * ::ZF_ERR_CANCELLED.
 * @param session The session.
 * @param n_keep Tokens to keep, at most the conversation's length.
 * @return ::ZF_OK; ::ZF_ERR_INVALID_ARGUMENT (NULL session, `n_keep` beyond the conversation,
 *         or a zf_generation in progress).
 */
ZF_API zf_status zf_session_truncate(zf_session* session, size_t n_keep);

/**
 * @brief Since 0.4: gives the session a draft model for speculative decoding
 * (zf_generate_params.draft_max > 0 turns it on per call): a smaller model with the target's
 * vocabulary drafts greedily in a session of its own (created here, with this session's context
 * length and the draft model's default threads), and the target verifies the drafts as for
 * prompt lookup, so the output is token for token the output without a draft, greedy or
 * sampled with a seed. A greedy draft is a point mass, for which the standard rejection rule is
 * exactly "sample the target at each position, keep the draft while they agree"; the output
 * distribution is the target's (doc/speculative.md). The draft's session follows this one's
 * conversation: before each draft it keeps the prefix it shares with the conversation and
 * evaluates the rest (zf_session_truncate() semantics for rejected drafts, turns, resets and
 * loaded states). The session holds a reference to the draft model (zf_model_free() on it is
 * safe); any number of sessions may share one draft model. Setting another draft replaces the
 * previous one; NULL removes it.
 *
 * Vocabulary check, as llama.cpp's speculative examples make it: the same tokenizer kind, the
 * same BOS and EOS (whether added, and their ids), token counts within 128 of each other and
 * the same text for every token id from 5 up to the smaller count (the first ids are special
 * tokens whose roles are checked instead). A drafted id the target lacks ends that draft.
 * @param session The target session.
 * @param draft The draft model (NULL: none).
 * @return ::ZF_OK; ::ZF_ERR_INVALID_ARGUMENT (NULL session, a zf_generation in progress, a
 *         draft loaded with ::ZF_MODEL_VOCAB_ONLY, or vocabularies that differ: the message names
 *         the first difference, e.g. the token id and both texts, or both token counts);
 *         ::ZF_ERR_OUT_OF_MEMORY.
 */
ZF_API zf_status zf_session_set_draft_model(zf_session* session, zf_model* draft);

/**
 * @brief Bytes zf_session_state_save() needs for the session as it is now: a header naming the
 * model (a fingerprint of its architecture, sizes and tensors), the conversation tokens and the
 * KV cache rows in use; on a model with recurrent layers also their state and its checkpoints
 * (checked on load).
 * @param session The session.
 * @param size Receives the size in bytes. Required.
 * @return ::ZF_OK; ::ZF_ERR_INVALID_ARGUMENT; ::ZF_ERR_UNSUPPORTED (an engine that cannot export
 *         its KV cache, e.g. CUDA in this version).
 */
ZF_API zf_status zf_session_state_size(const zf_session* session, size_t* size);

/**
 * @brief Writes the session's state into `buf` (see zf_session_state_size()).
 * @param session The session (not concurrently with a call using it).
 * @param buf Output buffer (may be NULL when cap is 0).
 * @param cap Size of `buf` in bytes.
 * @param written Receives the bytes written, or needed on ::ZF_ERR_BUFFER_TOO_SMALL. Required.
 * @return ::ZF_OK; ::ZF_ERR_BUFFER_TOO_SMALL; ::ZF_ERR_INVALID_ARGUMENT; ::ZF_ERR_UNSUPPORTED.
 */
ZF_API zf_status zf_session_state_save(const zf_session* session, void* buf, size_t cap, size_t* written);

/**
 * @brief Replaces the session's conversation and KV cache with a saved state. Nothing changes
 * on failure. The state must come from a session of the same model file (same fingerprint)
 * with the same KV cache type; its tokens must fit this session's context.
 * @param session The session to overwrite.
 * @param buf The saved state.
 * @param len Its size in bytes.
 * @return ::ZF_OK; ::ZF_ERR_FORMAT (not a state, truncated, inconsistent);
 *         ::ZF_ERR_INVALID_ARGUMENT (another model or KV type, NULL arguments, a generation in
 *         progress); ::ZF_ERR_CONTEXT_FULL; ::ZF_ERR_UNSUPPORTED.
 */
ZF_API zf_status zf_session_state_load(zf_session* session, const void* buf, size_t len);


/* ---------------------------------------------------------------------------------------------
 * Embeddings and reranking (since 0.4)
 * ------------------------------------------------------------------------------------------- */

/** @name Pooling: how an input's token states become one vector (zf_embed_params::pooling).
 * The values of the GGUF key `ARCH.pooling_type`.
 * @{ */
#define ZF_POOLING_DEFAULT (-1) /**< The file's `ARCH.pooling_type`; ::ZF_POOLING_LAST when the
                                     file has none (a generative model: its last token's state
                                     is the only one that has seen the whole input). */
#define ZF_POOLING_NONE 0       /**< One vector per token: not supported by zf_embed(). */
#define ZF_POOLING_MEAN 1       /**< The mean of every token's state. */
#define ZF_POOLING_CLS 2        /**< The first token's state ([CLS] of BERT models). */
#define ZF_POOLING_LAST 3       /**< The last token's state. */
#define ZF_POOLING_RANK 4       /**< The first token's state through the model's classification
                                     head (rerankers): n_cls_out scores, never normalized. */
/** @} */

#define ZF_EMBED_NO_NORMALIZE 0x1u /**< Leave vectors as pooled (default: L2-normalized). */

/** Options of zf_embed() and zf_embed_tokens(). Initialize with zf_embed_params_init(). */
typedef struct zf_embed_params {
  uint32_t struct_size; /**< sizeof(zf_embed_params). */
  uint32_t flags;       /**< ::ZF_EMBED_NO_NORMALIZE; other bits are rejected. */
  int32_t pooling;      /**< ::ZF_POOLING_DEFAULT (default) or a ZF_POOLING_* value. */
  int32_t dimensions;   /**< 0 (default): the model's hidden size; else keep the first
                             `dimensions` values (Matryoshka-trained models), then normalize. */
  int32_t n_threads;    /**< 0 (default): the model's thread count. */
  uint32_t reserved;    /**< Must be 0. */
} zf_embed_params;

/**
 * @brief Fills `params` with defaults (the model's pooling, L2 normalization, all dimensions).
 * @param params The struct to fill.
 * @param size sizeof(zf_embed_params) as the caller knows it.
 * @return ::ZF_OK, or ::ZF_ERR_INVALID_ARGUMENT if params is NULL or size < 4.
 */
ZF_API zf_status zf_embed_params_init(zf_embed_params* params, size_t size);

/**
 * @brief Values per input that zf_embed() writes with these options: the hidden size (or
 * `dimensions`), or for ::ZF_POOLING_RANK the number of classifier outputs. Thread-safe.
 * @param model The model.
 * @param params NULL for defaults.
 * @param dim Receives the count. Required.
 * @return ::ZF_OK; ::ZF_ERR_UNSUPPORTED (::ZF_POOLING_NONE, or rank pooling on a model
 *         without a classification head); ::ZF_ERR_INVALID_ARGUMENT (NULL model or dim, an
 *         unknown pooling, dimensions outside 0..hidden size, unknown flags, nonzero reserved).
 */
ZF_API zf_status zf_embed_dimension(const zf_model* model, const zf_embed_params* params, size_t* dim);

/**
 * @brief Embeds texts: one pooled vector per text, written one after the other into `out`
 * (text i at out[i * dim], dim from zf_embed_dimension()). Each text is tokenized as
 * llama.cpp's llama-embedding does (the model's special tokens added, e.g. [CLS] ... [SEP] for
 * BERT, and special-token text parsed). The texts run as batched passes over the weights (up
 * to 512 tokens and 64 texts per pass), each text attending only to itself (bidirectionally
 * in encoder models such as BERT, causally in generative ones), so a text's vector does not
 * depend on the others in the call beyond float rounding of the batched products.
 * A generative model (no `ARCH.pooling_type` in its file) is pooled from its last hidden
 * state after the output norm, with ::ZF_POOLING_LAST by default. CPU engine only in this
 * version. Thread-safe: any number of calls may run on one model at once.
 * @param model The model (not loaded with ::ZF_MODEL_VOCAB_ONLY).
 * @param params NULL for defaults.
 * @param texts `n` UTF-8 strings, borrowed for the call (may contain NUL).
 * @param lens Their lengths in bytes.
 * @param n Number of texts (0 writes nothing and sets *needed to 0).
 * @param out Output array of floats (may be NULL when cap is 0).
 * @param cap Capacity of `out` in floats.
 * @param needed Optional; receives n * dim, the floats required.
 * @return ::ZF_OK; ::ZF_ERR_BUFFER_TOO_SMALL (nothing computed; retry with *needed);
 *         ::ZF_ERR_INVALID_UTF8 (the message names the text); ::ZF_ERR_UNSUPPORTED (see
 *         zf_embed_dimension(); a model on the CUDA engine); ::ZF_ERR_INVALID_ARGUMENT (NULL
 *         model, texts or lens with n > 0, a text that gives no tokens or more than the
 *         model's training context, the options as for zf_embed_dimension());
 *         ::ZF_ERR_OUT_OF_MEMORY.
 */
ZF_API zf_status zf_embed(const zf_model* model, const zf_embed_params* params, const char* const* texts,
                          const size_t* lens, size_t n, float* out, size_t cap, size_t* needed);

/**
 * @brief As zf_embed(), for inputs already tokenized (nothing is added to them).
 * @param model The model.
 * @param params NULL for defaults.
 * @param tokens `n` arrays of token ids, borrowed for the call.
 * @param n_tokens Their lengths (each at least 1).
 * @param n Number of inputs.
 * @param out Output array of floats (may be NULL when cap is 0).
 * @param cap Capacity of `out` in floats.
 * @param needed Optional; receives n * dim.
 * @return As zf_embed(); ::ZF_ERR_INVALID_ARGUMENT also for a token id outside the vocabulary
 *         (the message names the input and index).
 */
ZF_API zf_status zf_embed_tokens(const zf_model* model, const zf_embed_params* params,
                                 const int32_t* const* tokens, const size_t* n_tokens, size_t n, float* out,
                                 size_t cap, size_t* needed);


/**
 * @brief Scores documents against a query with a reranker (a model with a classification
 * head, e.g. bge-reranker: `cls` / `cls.output` tensors, `ARCH.pooling_type` = rank). Each
 * (query, document) pair is formatted as llama-server's /rerank formats it: the file's
 * `tokenizer.chat_template.rerank` with {query} and {document} replaced, else
 * [BOS] query [EOS] [SEP] document [EOS], each special token where the vocabulary asks for it
 * (for BERT: [CLS] query [SEP] document). The pairs run batched as in zf_embed(). A score is
 * the classifier's first output, unnormalized (higher = more relevant). Thread-safe.
 * @param model The reranker.
 * @param params NULL for defaults; pooling must be ::ZF_POOLING_DEFAULT or ::ZF_POOLING_RANK,
 *        dimensions 0 and flags 0 (n_threads applies).
 * @param query UTF-8 query, borrowed for the call.
 * @param query_len Its length in bytes.
 * @param docs `n_docs` UTF-8 documents, borrowed for the call.
 * @param doc_lens Their lengths in bytes.
 * @param n_docs Number of documents (0 does nothing).
 * @param scores Output: `n_docs` floats, in the order of `docs`. Required when n_docs > 0.
 * @return ::ZF_OK; ::ZF_ERR_UNSUPPORTED (no classification head); ::ZF_ERR_INVALID_UTF8 (the
 *         message names the text); ::ZF_ERR_INVALID_ARGUMENT (NULL arguments, other pooling,
 *         flags or dimensions, a pair longer than the model's training context).
 */
ZF_API zf_status zf_rerank(const zf_model* model, const zf_embed_params* params, const char* query,
                           size_t query_len, const char* const* docs, const size_t* doc_lens, size_t n_docs,
                           float* scores);

/* ---------------------------------------------------------------------------------------------
 * Chat turns (since 0.5): one call runs a whole assistant turn
 * ------------------------------------------------------------------------------------------- */

/** A running or finished chat turn (zf_chat_turn_begin(), zf_chat_turn()). */
typedef struct zf_turn zf_turn;

/**
 * @name Turn event kinds (zf_turn_event.kind)
 * A turn's events, concatenated per kind, are its final assistant message (zf_chat_turn_message()):
 * the CONTENT texts are its content, the REASONING texts its reasoning, each TOOL_CALL starts
 * call `index` (its id and name) and that call's TOOL_ARGS fragments are its arguments' JSON
 * text. Calls come in index order; a call's fragments come after its TOOL_CALL event.
 * @{
 */
#define ZF_TURN_CONTENT 1    /**< text: more of the answer's content. */
#define ZF_TURN_REASONING 2  /**< text: more of the reasoning (thinking) text. */
#define ZF_TURN_TOOL_CALL 3  /**< A tool call begins: tool_index, tool_id, tool_name. */
#define ZF_TURN_TOOL_ARGS 4  /**< text: more of call tool_index's arguments (JSON text). */
#define ZF_TURN_LOGPROBS 5   /**< Tokens whose text is held back (a marker or a call still
                                  arriving) carry their log-probabilities here; only with
                                  zf_generate_params.n_logprobs > 0. */
#define ZF_TURN_DONE 6       /**< The last event: finish_reason, stop_reason and the usage. */
/** @} */

/**
 * @name Finish reasons (zf_turn_event.finish_reason, OpenAI's names)
 * @{
 */
#define ZF_FINISH_STOP 0       /**< The model ended the turn (or a stop string, or the caller). */
#define ZF_FINISH_LENGTH 1     /**< max_tokens or the context ended it. */
#define ZF_FINISH_TOOL_CALLS 2 /**< The turn ended with tool calls to run. */
/** @} */

/**
 * One event of a chat turn. The library fills it (struct_size says how much: the caller sets
 * it to sizeof(zf_turn_event) before zf_chat_turn_next(); callbacks get the library's size).
 * Every pointer in it is borrowed: valid until the next event (or the callback returns).
 */
typedef struct zf_turn_event {
  uint32_t struct_size;    /**< sizeof(zf_turn_event). */
  int32_t kind;            /**< ZF_TURN_*. */
  const char* text;        /**< CONTENT, REASONING, TOOL_ARGS: UTF-8 (whole characters), not
                                NUL-terminated; else NULL. */
  size_t text_len;         /**< Bytes of text. */
  int32_t tool_index;      /**< TOOL_CALL, TOOL_ARGS: the call's index (0, 1, ...); else -1. */
  int32_t finish_reason;   /**< DONE: ZF_FINISH_*. */
  const char* tool_id;     /**< TOOL_CALL: the call's id (NUL-terminated); else NULL. */
  const char* tool_name;   /**< TOOL_CALL: the function's name (NUL-terminated); else NULL. */
  /** The log-probabilities of the tokens generated since the previous event that carried any
      (n_logprobs > 0 only; else NULL): n_logprobs entries, logprob_stride per token (the
      chosen token, then its alternatives), as zf_session_logprobs() lays them out. */
  const zf_token_logprob* logprobs;
  size_t n_logprobs;       /**< Entries in logprobs (0 when none). */
  size_t logprob_stride;   /**< Entries per token in logprobs: 1 + the alternatives (0 when none). */
  int32_t stop_reason;     /**< DONE: ZF_STOP_*. */
  int32_t n_prompt;        /**< DONE: the rendered prompt's tokens. */
  int32_t n_cached;        /**< DONE: of those, not evaluated again (kept in the session from
                                an earlier turn, or mapped from the model's prefix cache). */
  int32_t n_generated;     /**< DONE: tokens generated. */
  int32_t n_drafted;       /**< DONE: tokens drafted by speculative decoding. */
  int32_t n_accepted;      /**< DONE: of those, kept. */
  double prompt_ms;        /**< DONE: time to render, tokenize and evaluate the prompt. */
  double decode_ms;        /**< DONE: time generating. */
} zf_turn_event;

/**
 * Receives a turn's events on the calling thread, during zf_chat_turn(). `event` is valid
 * during the call. Return 0 to continue, nonzero to stop the turn (it then ends as if the
 * model had stopped: the events so far are the message, stop reason ::ZF_STOP_CALLBACK).
 */
typedef int32_t (*zf_turn_cb)(void* user_data, const zf_turn_event* event);

/** Options of a chat turn. Initialize with zf_turn_params_init(). */
typedef struct zf_turn_params {
  uint32_t struct_size;       /**< sizeof(zf_turn_params). */
  uint32_t flags;             /**< ::ZF_CHAT_FIXED_TIME; other bits are rejected. */
  /**
   * The request: a JSON object with OpenAI Chat Completions' names (UTF-8, NUL-terminated;
   * required). `messages` (required: the conversation, OpenAI's message objects incl.
   * assistant `tool_calls` and `tool` results), `tools`, `tool_choice` ("auto" default, "none",
   * "required" or {"type":"function","function":{"name"}}), `parallel_tool_calls` (default
   * true), `response_format` ({"type":"text"|"json_object"|"json_schema","json_schema":
   * {"schema"}}), `reasoning_format` ("auto" default: reasoning is split out; "none": the
   * text as generated is the content), `chat_template_kwargs` (extra template variables,
   * e.g. {"enable_thinking": false}), `documents` and `continue_final_message` (a final
   * assistant message is continued, as llama-server's prefill does: the model goes on from its
   * text; true / "content" / "reasoning_content" choose what is continued, false asks for a new
   * turn after it). Other keys are ignored. Borrowed for
   * zf_chat_turn_begin() / zf_chat_turn() only.
   */
  const char* request_json;
  const char* template_name;  /**< As zf_chat_params.template_name (NULL: the file's). */
  const char* template_text;  /**< As zf_chat_params.template_text (NULL: none). */
  /** Sampling, max_tokens, stop strings, seed, logprobs, speculative decoding: as for
      zf_generate() (NULL: zf_generate_params_init()'s defaults). Its constraint fields give an
      output constraint of any kind (instead of `response_format`); constraint_trigger and the
      ZF_GENERATE_NO_SPECIAL / NO_PARSE_SPECIAL flags must be unset (the turn decides them). */
  const zf_generate_params* generate;
  int64_t time_unix;          /**< strftime_now's clock with ::ZF_CHAT_FIXED_TIME (seconds). */
  /**
   * The vision projector for the request's image parts (since 0.7; NULL: none). `messages[i]
   * .content` may then hold OpenAI image parts, {"type":"image_url","image_url":{"url":
   * "data:image/<png|jpeg|gif|bmp|webp>;base64,..."}} (data URLs only: an http(s) URL is refused
   * naming the part, fetch it first). A message with images has its parts joined as llama-server
   * joins them (text parts by "\n", nothing around an image) and each image placed where the
   * template puts the message's text, as zf_session_eval_image() places it. Each image is
   * encoded once (the projector keeps recent images' embeddings by content hash, so an image
   * kept in the conversation is not encoded again on later turns), and the session's tokens
   * carry the image's hash (see zf_session_eval_embeddings()), so a later turn reuses the KV
   * rows of an image it repeats and never those of another image. Without a projector (NULL or
   * an older struct_size) a request with an image part is refused ::ZF_ERR_INVALID_ARGUMENT
   * naming `messages[i].content[j]`. It must belong to the session's model.
   * An audio projector (zf_mmproj_summary::modalities has ::ZF_MODALITY_AUDIO) takes OpenAI
   * audio parts instead, {"type":"input_audio","input_audio":{"data":"<base64>","format":
   * "wav"}}, placed as zf_session_eval_audio() places a clip; the library decodes WAV only
   * (another format is refused naming the part: decode it first). Image parts with an audio
   * projector, and audio parts with an image projector, are refused naming the part.
   */
  const struct zf_mmproj* mmproj;
} zf_turn_params;

/** @brief Fills defaults (no flags, no request); see zf_model_params_init(). */
ZF_API zf_status zf_turn_params_init(zf_turn_params* params, size_t size);

/**
 * @brief Starts an assistant turn on a session: renders the request's messages with the
 * model's chat template (tools, documents, template variables; the generation prompt added),
 * keeps what the session already holds of that prompt (its longest common prefix with the
 * session's tokens; the rest of the KV cache is dropped) and what the model's prefix cache
 * has, evaluates the rest, and prepares the output constraint once: `response_format` or
 * generate->constraint; with `tools` and `tool_choice` "required" or a named function, the
 * template's own tool-call format with each call's arguments valid for its tool's
 * `parameters` from the first token; with "auto", the same grammar armed lazily when the
 * model writes the format's opening text (only when nothing else constrains the output);
 * "none" shows the tools to the template but reads no calls back. Then each
 * zf_chat_turn_next() generates until it has the next event. The text is parsed incrementally
 * as it arrives (each piece costs time for its own length, not the answer's) into content,
 * reasoning and tool calls in the template's format (see zf_chat_parse()); with
 * `parallel_tool_calls` false at most one call is read. The session is busy until the turn is
 * done or freed (as with zf_generate_begin()). Must be freed with zf_chat_turn_free().
 * @param session The session (its conversation so far is reused where the prompt repeats it).
 * @param params The request (required).
 * @param out Receives the turn; NULL on failure.
 * @return ::ZF_OK; ::ZF_ERR_INVALID_ARGUMENT (NULL arguments, malformed request JSON or a field
 *         of the wrong type or value, a tool_choice naming no offered tool, tool_choice
 *         "required" with a response_format, an invalid schema or constraint — the message names
 *         the field —, a busy session, unknown flags); ::ZF_ERR_INVALID_UTF8; ::ZF_ERR_TEMPLATE
 *         (the template failed); ::ZF_ERR_NOT_FOUND (no such template_name);
 *         ::ZF_ERR_CONTEXT_FULL (the prompt does not fit; nothing is evaluated);
 *         ::ZF_ERR_UNSUPPORTED (a constraint in a build without constraints).
 */
ZF_API zf_status zf_chat_turn_begin(zf_session* session, const zf_turn_params* params, zf_turn** out);

/**
 * @brief The turn's next event (pull-style streaming): generates until there is one. After the
 * ::ZF_TURN_DONE event every further call returns it again.
 * @param turn The turn.
 * @param event Filled; the caller sets event->struct_size first. Borrowed pointers in it are
 *        valid until the next call on the turn.
 * @return ::ZF_OK; ::ZF_ERR_INVALID_ARGUMENT (NULL arguments, struct_size too small);
 *         ::ZF_ERR_CONTEXT_FULL and other evaluation errors (the turn is then done).
 */
ZF_API zf_status zf_chat_turn_next(zf_turn* turn, zf_turn_event* event);

/**
 * @brief The turn's assistant message as OpenAI JSON (NUL-terminated), as zf_chat_parse()
 * writes it: `{"role":"assistant","content":string|null,"reasoning_content"?,"tool_calls"?}`.
 * Before the turn is done: the message so far (what the events said).
 * @return ::ZF_OK; ::ZF_ERR_BUFFER_TOO_SMALL (retry with *needed); ::ZF_ERR_INVALID_ARGUMENT.
 */
ZF_API zf_status zf_chat_turn_message(const zf_turn* turn, char* buf, size_t cap, size_t* needed);

/**
 * @brief Stops the turn if it is still running (the session keeps what was generated, so the
 * next turn reuses it) and frees it. NULL is a no-op. Any thread, once.
 */
ZF_API void zf_chat_turn_free(zf_turn* turn);

/**
 * @brief The prompt a turn with these params would evaluate: the request's messages, tools and
 * documents rendered with the template exactly as zf_chat_turn_begin() renders them (the
 * generation prompt added; a named tool_choice shows only that tool). Nothing is evaluated;
 * the constraint is not compiled. For servers' /apply-template and for counting tokens
 * (zf_tokenize() with ::ZF_TOKENIZE_ADD_SPECIAL | ::ZF_TOKENIZE_PARSE_SPECIAL). Thread-safe.
 * With params->mmproj (since 0.7) image parts are accepted and each image appears as the
 * projector's marker text around its rows (Gemma 3: `<start_of_image><end_of_image>`); the rows
 * themselves have no text: a count adds zf_image_embed()'s *n_tokens per image (Gemma 3:
 * zf_mmproj_summary.n_tokens; Idefics3 shows each tile's markers). Nothing is encoded.
 * Audio parts (an audio projector) likewise: the marker text, and the rows a count adds are
 * zf_audio_embed()'s *n_tokens for the clip's length (30 s chunks; the WAV is decoded, not encoded).
 * @param model The model.
 * @param params The request (required); params->generate is only checked; params->mmproj, when
 *        set, must belong to `model`.
 * @param buf Output buffer (NUL-terminated; may be NULL when cap is 0).
 * @param cap Size of `buf` in bytes.
 * @param needed Optional; receives the bytes required including the NUL.
 * @return ::ZF_OK; ::ZF_ERR_BUFFER_TOO_SMALL; the request and template errors of
 *         zf_chat_turn_begin().
 */
ZF_API zf_status zf_chat_turn_prompt(const zf_model* model, const zf_turn_params* params, char* buf, size_t cap,
                                     size_t* needed);

/**
 * @brief Runs a whole turn (zf_chat_turn_begin(), then zf_chat_turn_next() until
 * ::ZF_TURN_DONE), passing each event to `cb` (may be NULL), and returns the finished turn in
 * *out (may be NULL) for zf_chat_turn_message(). zf_session_cancel() ends it early.
 * @return As zf_chat_turn_begin() and zf_chat_turn_next().
 */
ZF_API zf_status zf_chat_turn(zf_session* session, const zf_turn_params* params, zf_turn_cb cb, void* user_data,
                              zf_turn** out);

/* ---------------------------------------------------------------------------------------------
 * LoRA adapters (since 0.6)
 * ------------------------------------------------------------------------------------------- */

/**
 * @brief A LoRA adapter loaded against a model (opaque). Immutable after zf_lora_load(): any
 * number of sessions and threads may apply it at once; zf_lora_free() may be called from any
 * thread, in any order with the model and the sessions applying it.
 */
typedef struct zf_lora_adapter zf_lora_adapter;

/**
 * @brief What zf_lora_info() reports about an adapter. Append-only; `struct_size` first.
 */
typedef struct zf_lora_summary {
  uint32_t struct_size; /**< Set by the caller to sizeof(zf_lora_summary). */
  int32_t rank;         /**< The largest rank of its pairs (lora_a's second dimension). */
  float alpha;          /**< `adapter.lora.alpha` (0 when the file has none). */
  uint32_t n_weights;   /**< Adapted weights (lora_a/lora_b pairs). */
} zf_lora_summary;

/**
 * @brief Loads a GGUF LoRA adapter as llama.cpp's convert_lora_to_gguf.py writes it
 * (`general.type` = "adapter", `adapter.type` = "lora", `adapter.lora.alpha`; per adapted
 * weight the tensors `<weight name>.lora_a`, ne = [n_in, rank], and `.lora_b`, ne = [rank,
 * n_out]) and checks it against `model`: the same `general.architecture`, every weight present
 * in the model with the pair's shapes matching it and each other. Adaptable: the attention
 * projections (attn_q, attn_k, attn_v, attn_output) and the dense FFN's (ffn_gate, ffn_up,
 * ffn_down), each stored on its own; tensors of type F32, F16, BF16 or Q8_0 (read into F32).
 * Adapted norms (`*_norm.weight`) are ignored, as the reference ignores them. Applied with
 * zf_session_set_loras().
 *
 * Lifetime: the adapter holds a reference to the model (zf_model_free() before zf_lora_free()
 * is safe); a session applying the adapter keeps it alive (zf_lora_free() while it is applied
 * is safe). Thread-safe.
 * @param model The model (not loaded with ::ZF_MODEL_VOCAB_ONLY).
 * @param path The adapter file (NUL-terminated UTF-8).
 * @param out Receives the adapter (NULL on failure). Required.
 * @return ::ZF_OK; ::ZF_ERR_IO; ::ZF_ERR_FORMAT (not a GGUF file or not a LoRA adapter, a
 *         pair missing one half, a tensor neither `.lora_a` nor `.lora_b`);
 *         ::ZF_ERR_INVALID_ARGUMENT (NULL arguments, a vocabulary-only model, another
 *         architecture, a tensor the model lacks, shapes that do not match: the message names the
 *         tensor and both shapes); ::ZF_ERR_UNSUPPORTED (a weight that cannot be adapted, a tensor
 *         type that cannot be read); ::ZF_ERR_OUT_OF_MEMORY.
 */
ZF_API zf_status zf_lora_load(zf_model* model, const char* path, zf_lora_adapter** out);

/**
 * @brief Releases the caller's handle; the adapter's memory goes with the last session applying
 * it. NULL is a no-op. Any thread.
 */
ZF_API void zf_lora_free(zf_lora_adapter* adapter);

/**
 * @brief Describes an adapter (see ::zf_lora_summary). Thread-safe.
 * @param adapter The adapter.
 * @param info Receives the summary; info->struct_size must be set (fields beyond it are not
 *        written).
 * @return ::ZF_OK; ::ZF_ERR_INVALID_ARGUMENT (NULL arguments, struct_size too small).
 */
ZF_API zf_status zf_lora_info(const zf_lora_adapter* adapter, zf_lora_summary* info);

/**
 * @brief Sets the LoRA adapters the session's evaluations apply from now on (generation,
 * zf_session_eval(), chat turns): every adapted weight W computes W x + s * B (A x) with
 * s = scales[i] * alpha / rank (scales[i] alone when the adapter's alpha is 0), the low-rank
 * products in F32; several adapters add up. Replaces the previous set; n = 0 clears it. An
 * adapter with scale 0 is left out, so scale 0 (or no adapters) gives the base model's output bit
 * for bit. The session keeps its set across zf_session_reset().
 *
 * The conversation's KV rows stay as they were computed (as llama.cpp keeps them): to evaluate a
 * conversation under the new set from its start, call zf_session_reset() (or
 * zf_session_truncate() to 0). Prefill is exact as without adapters (one token at a time,
 * chunked and batched evaluation give the same bits). The model's prefix cache keys its blocks
 * by the adapter set and scales: sessions with the same set share them; a session whose
 * conversation was computed under another set neither takes nor stores blocks until it is
 * emptied. Batched decode (zf_model_params.max_batch) runs sessions with different sets in one
 * step: the base products once for all rows, each row's low-rank products its own.
 * @param session The session (no generation in progress).
 * @param adapters n adapters of the session's model (NULL when n is 0).
 * @param scales n finite scales (NULL when n is 0).
 * @param n Number of adapters.
 * @return ::ZF_OK; ::ZF_ERR_INVALID_ARGUMENT (NULL arguments, an adapter of another model, a
 *         scale that is not finite, a generation in progress); ::ZF_ERR_UNSUPPORTED (a session on
 *         an engine that cannot apply adapters: CUDA in this version; a set of only zero scales is
 *         accepted); ::ZF_ERR_OUT_OF_MEMORY.
 */
ZF_API zf_status zf_session_set_loras(zf_session* session, const zf_lora_adapter* const* adapters,
                                      const float* scales, size_t n);

/* ---------------------------------------------------------------------------------------------
 * Speech to text: Whisper (since 0.7)
 * ------------------------------------------------------------------------------------------- */

/**
 * @brief A Whisper model loaded from a whisper.cpp ggml `.bin` file (opaque). Its own handle,
 * not a ::zf_model: a speech model has no sessions, chat template or GGUF metadata, and a
 * distinct type lets neither be passed where the other is meant. Immutable after
 * zf_speech_load(): any number of threads may transcribe with it at once (each zf_transcribe()
 * call has its own working state). zf_speech_free() may be called from any thread; results of
 * zf_transcribe() stay valid after it.
 */
typedef struct zf_speech_model zf_speech_model;

/**
 * @brief The outcome of zf_transcribe(): segments, full text and language (opaque; owned by
 * the caller, released with zf_transcription_free()). Immutable; readable from any thread.
 */
typedef struct zf_transcription zf_transcription;

/**
 * @brief Loads a whisper.cpp ggml `.bin` model (tiny, base, small, medium, large; `.en` and
 * multilingual; F32, F16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 tensors). Thread-safe.
 * @param path The file (NUL-terminated UTF-8).
 * @param flags Reserved; must be 0.
 * @param out Receives the model (NULL on failure). Required.
 * @return ::ZF_OK; ::ZF_ERR_IO (cannot open or map); ::ZF_ERR_FORMAT (not a whisper.cpp file:
 *         a GGUF file is named as such; a truncated or inconsistent one: the message names the
 *         field or tensor); ::ZF_ERR_UNSUPPORTED (a tensor type); ::ZF_ERR_INVALID_ARGUMENT
 *         (NULL path/out, nonzero flags); ::ZF_ERR_OUT_OF_MEMORY.
 */
ZF_API zf_status zf_speech_load(const char* path, uint32_t flags, zf_speech_model** out);

/** @brief Releases the model. NULL is a no-op. Any thread. */
ZF_API void zf_speech_free(zf_speech_model* model);

/** What zf_speech_info() reports about a model. Append-only; `struct_size` first. */
typedef struct zf_speech_summary {
  uint32_t struct_size;   /**< Set by the caller to sizeof(zf_speech_summary). */
  int32_t n_vocab;        /**< Vocabulary size (51864 English-only, 51865 multilingual, 51866 large-v3). */
  int32_t n_mels;         /**< Log-mel bins (80, or 128 for large-v3). */
  int32_t n_audio_layer;  /**< Encoder blocks. */
  int32_t n_text_layer;   /**< Decoder blocks. */
  int32_t n_audio_state;  /**< Encoder width. */
  int32_t multilingual;   /**< 1 for multilingual models (language detection, translation); 0 for `.en`. */
  uint32_t reserved;      /**< Padding; written as 0. */
} zf_speech_summary;

/**
 * @brief Describes a speech model (see ::zf_speech_summary). Thread-safe.
 * @return ::ZF_OK; ::ZF_ERR_INVALID_ARGUMENT (NULL arguments, struct_size too small).
 */
ZF_API zf_status zf_speech_info(const zf_speech_model* model, zf_speech_summary* info);

/** @name Transcription flags (zf_transcribe_params::flags). */
/**@{*/
#define ZF_TRANSCRIBE_TRANSLATE 1u     /**< The translate task: English text from any language (multilingual models). */
#define ZF_TRANSCRIBE_NO_TIMESTAMPS 2u /**< Decode without timestamp tokens: one segment per 30 s window. */
/** Token-level timestamps (whisper.cpp's token_timestamps) and words: fills
 *  zf_speech_segment::token_times, zf_speech_segment::words and
 *  zf_speech_segment::n_words. */
#define ZF_TRANSCRIBE_WORD_TIMESTAMPS 4u
/** Keep initial_prompt in front of every window's prompt (whisper.cpp's carry_initial_prompt),
 *  not only the first. */
#define ZF_TRANSCRIBE_CARRY_PROMPT 8u
/**@}*/

/** Options of zf_transcribe(). Initialize with zf_transcribe_params_init(). */
typedef struct zf_transcribe_params {
  uint32_t struct_size;    /**< sizeof(zf_transcribe_params). */
  int32_t n_threads;       /**< Worker threads; 0 = the hardware's (at most 8). */
  /** A language code of Whisper's ("en", "de", ...), "auto" to detect it (multilingual models),
   *  or NULL/"" for "en". English-only models accept only "en", "auto" or NULL. */
  const char* language;
  /** Text to condition the first window on (whisper.cpp's initial_prompt: tokenized by its
   *  whisper_tokenize rule and placed after <|startofprev|>; the last n_text_ctx/2 - 1 tokens
   *  are kept), or NULL/"" for none. NUL-terminated UTF-8, borrowed for the call. */
  const char* initial_prompt;
  uint32_t flags;          /**< ZF_TRANSCRIBE_* bits; unknown bits are rejected. */
  uint32_t reserved;       /**< Must be 0. */
  /* Appended (issue #47, decoding as whisper.cpp); defaults are whisper_full_default_params(
   * WHISPER_SAMPLING_GREEDY)'s. Callers with the shorter struct get them. */
  float temperature;       /**< First temperature, in [0, 1] (default 0: greedy or beam search). */
  /** Fallback step (default 0.2; 0: no fallback): a window whose best sequence repeats itself
   *  (entropy_thold) or scores under logprob_thold while not silent (no_speech_thold) is decoded
   *  again at temperature + temperature_inc, ... up to 1.0, sampling best_of sequences. */
  float temperature_inc;
  int32_t beam_size;       /**< > 1: beam search with this many beams (at most 8); 0 or 1: greedy (default). whisper-cli uses 5. */
  int32_t best_of;         /**< Sequences sampled per window above temperature 0, 1..8 (default 5). */
  float length_penalty;    /**< Score = sum logprob / ((5 + n) / 6)^length_penalty when > 0; else / n (default -1). */
  float entropy_thold;     /**< Fallback when the last 32 tokens' entropy is below it (default 2.4). */
  float logprob_thold;     /**< Fallback when the average log-probability is below it (default -1). */
  float no_speech_thold;   /**< A window is silence when P(<|nospeech|>) is above it and logprob_thold failed (default 0.6). */
  /** Sampling seed: sequence j draws from std::mt19937(seed + j) (whisper.cpp seeds j), so a
   *  seed gives the same transcript on every run (default 0). */
  uint32_t seed;
  /** Previous-text tokens offered as the next window's prompt (default 16384, capped by the
   *  model at n_text_ctx/2; 0: windows are decoded without the previous text). */
  int32_t n_max_text_ctx;
} zf_transcribe_params;

/**
 * @brief Fills `params` with defaults (language "en", timestamps on, hardware threads).
 * @param params The struct to fill.
 * @param size sizeof(zf_transcribe_params) as the caller knows it.
 * @return ::ZF_OK, or ::ZF_ERR_INVALID_ARGUMENT if params is NULL or size < 4.
 */
ZF_API zf_status zf_transcribe_params_init(zf_transcribe_params* params, size_t size);

/** One decoded token of a segment. */
typedef struct zf_speech_token {
  int32_t id;   /**< Token id (text or timestamp token); zf_speech_token_text() gives its text. */
  float p;      /**< The probability the decoder gave it. */
  float plog;   /**< Its log-probability. */
  uint32_t reserved; /**< Written as 0. */
} zf_speech_token;

/** Start and end of a token (entries parallel to zf_speech_segment::tokens). An array element:
 *  this struct never grows. */
typedef struct zf_speech_token_time {
  int64_t t0_ms;  /**< Start in milliseconds from the start of the audio (10 ms resolution). */
  int64_t t1_ms;  /**< End in milliseconds. */
} zf_speech_token_time;

/** A word: the segment's text tokens joined at a leading space (punctuation stays with the word
 *  before it). An array element: this struct never grows. */
typedef struct zf_speech_word {
  const char* text;  /**< UTF-8, NUL-terminated, with its leading space as in the segment text. */
  size_t text_len;   /**< Bytes of `text` without the NUL. */
  int64_t t0_ms;     /**< Start of its first token. */
  int64_t t1_ms;     /**< End of its last token. */
  float p;           /**< The lowest probability among its tokens. */
  uint32_t reserved; /**< Written as 0. */
} zf_speech_word;

/** A transcribed segment: the text between two timestamps. Filled by the library. */
typedef struct zf_speech_segment {
  uint32_t struct_size;   /**< The caller's sizeof for zf_transcription_segment(); the library's in callbacks. */
  uint32_t reserved;      /**< Written as 0. */
  int64_t t0_ms;          /**< Start in milliseconds from the start of the audio (10 ms resolution). */
  int64_t t1_ms;          /**< End in milliseconds. */
  const char* text;       /**< UTF-8 text (NUL-terminated; usually starts with a space). */
  size_t text_len;        /**< Bytes of `text` without the NUL. */
  const zf_speech_token* tokens; /**< The segment's tokens (text and timestamps). */
  size_t n_tokens;        /**< Entries in `tokens`. */
  float no_speech_prob;   /**< Probability of <|nospeech|> at the window's first step. */
  uint32_t reserved2;     /**< Written as 0. */
  /* Appended (issue #47, decoding as whisper.cpp). */
  /** With ::ZF_TRANSCRIBE_WORD_TIMESTAMPS: n_tokens entries, each token's start and end
   *  (whisper.cpp's token-level timestamps); else NULL. */
  const zf_speech_token_time* token_times;
  const zf_speech_word* words; /**< With ::ZF_TRANSCRIBE_WORD_TIMESTAMPS: the words; else NULL. */
  size_t n_words;         /**< Entries in `words`. */
  float temperature;      /**< The temperature the window was decoded at (above the first: a fallback). */
  float avg_logprob;      /**< Average log-probability of the window's tokens. */
} zf_speech_segment;

/**
 * @brief Receives each segment as soon as it is decoded, in order. The segment and its pointers
 * are valid only during the call. Return 0 to continue, nonzero to stop (zf_transcribe() then
 * returns ::ZF_OK with the segments so far). Runs on the calling thread.
 */
typedef int32_t (*zf_segment_cb)(void* user_data, const zf_speech_segment* segment);

/**
 * @brief Transcribes (or translates) 16 kHz mono float PCM with timestamps, as whisper.cpp
 * 1.8.5's whisper_full does: 30 s windows, each conditioned on the previous one's text, the
 * next starting at the last timestamp; greedy or beam search, with the temperature fallback. Thread-safe: concurrent calls on one model are
 * independent.
 * @param model The speech model.
 * @param pcm n_samples samples in [-1, 1] at 16 kHz (zf_wav_decode() converts WAV files).
 * @param n_samples Number of samples; must be > 0.
 * @param params Options (NULL: defaults).
 * @param cb Optional segment callback.
 * @param user_data Passed to cb.
 * @param out Optional; receives the result (free with zf_transcription_free()); NULL on failure.
 * @return ::ZF_OK; ::ZF_ERR_INVALID_ARGUMENT (NULL model, NULL or empty pcm, a language Whisper
 *         does not know or that an English-only model cannot decode, translate on an
 *         English-only model, n_threads < 0, unknown flags, nonzero reserved, struct_size too
 *         small, temperature or temperature_inc outside [0, 1], beam_size or best_of outside
 *         their ranges, a threshold that is not a finite number, n_max_text_ctx < 0: the
 *         message names the field); ::ZF_ERR_OUT_OF_MEMORY.
 */
ZF_API zf_status zf_transcribe(const zf_speech_model* model, const float* pcm, size_t n_samples,
                               const zf_transcribe_params* params, zf_segment_cb cb, void* user_data,
                               zf_transcription** out);

/** @brief Segments in a result (0 for NULL). Thread-safe. */
ZF_API size_t zf_transcription_n_segments(const zf_transcription* result);

/**
 * @brief Segment i of a result. The pointers in *out stay valid until zf_transcription_free().
 * @param result The result.
 * @param i The segment's index, below zf_transcription_n_segments().
 * @param out Receives the segment; out->struct_size must be set (fields beyond it are not written).
 * @return ::ZF_OK; ::ZF_ERR_INVALID_ARGUMENT (NULL arguments, i out of range, struct_size too small).
 */
ZF_API zf_status zf_transcription_segment(const zf_transcription* result, size_t i, zf_speech_segment* out);

/**
 * @brief The whole text (the segments' texts concatenated), NUL-terminated into a caller buffer.
 * @return ::ZF_OK; ::ZF_ERR_BUFFER_TOO_SMALL (retry with *needed); ::ZF_ERR_INVALID_ARGUMENT.
 */
ZF_API zf_status zf_transcription_text(const zf_transcription* result, char* buf, size_t cap, size_t* needed);

/**
 * @brief The language decoded with (e.g. "en"; the detected one for "auto").
 * @return ::ZF_OK; ::ZF_ERR_BUFFER_TOO_SMALL (retry with *needed); ::ZF_ERR_INVALID_ARGUMENT.
 */
ZF_API zf_status zf_transcription_language(const zf_transcription* result, char* buf, size_t cap, size_t* needed);

/**
 * @brief With language "auto": the detected language's probability (softmax over the language
 * tokens after <|startoftranscript|> on the first window, as whisper_lang_auto_detect); 0 when
 * the language was given. Thread-safe.
 * @return ::ZF_OK; ::ZF_ERR_INVALID_ARGUMENT (NULL arguments).
 */
ZF_API zf_status zf_transcription_language_prob(const zf_transcription* result, float* prob);

/** @brief Releases a result. NULL is a no-op. Any thread. */
ZF_API void zf_transcription_free(zf_transcription* result);

/**
 * @brief The text of a token ("" for special and timestamp tokens), NUL-terminated. Thread-safe.
 * @return ::ZF_OK; ::ZF_ERR_BUFFER_TOO_SMALL (retry with *needed); ::ZF_ERR_INVALID_ARGUMENT
 *         (NULL model, id out of range).
 */
ZF_API zf_status zf_speech_token_text(const zf_speech_model* model, int32_t id, char* buf, size_t cap, size_t* needed);

/**
 * @brief Decodes a WAV (RIFF/WAVE) file's bytes into 16 kHz mono float PCM: integer PCM of
 * 8/16/24/32 bits or float of 32/64 bits, any channel count (averaged), any sample rate
 * (resampled linearly). Thread-safe; needs no model.
 * @param data The file's bytes.
 * @param size Their count.
 * @param pcm Output samples (may be NULL when cap is 0).
 * @param cap Capacity of `pcm` in samples.
 * @param n_samples Receives the samples written, or needed on ::ZF_ERR_BUFFER_TOO_SMALL. Required.
 * @return ::ZF_OK; ::ZF_ERR_BUFFER_TOO_SMALL; ::ZF_ERR_INVALID_ARGUMENT (NULL data/n_samples;
 *         not RIFF/WAVE, a missing or malformed chunk, a sample format other than the above such
 *         as compressed WAV: the message names it).
 */
ZF_API zf_status zf_wav_decode(const void* data, size_t size, float* pcm, size_t cap, size_t* n_samples);

/* ---------------------------------------------------------------------------------------------
 * Images: vision projectors (mmproj) and image embeddings (since 0.7)
 * ------------------------------------------------------------------------------------------- */

/**
 * @brief A vision projector (llama.cpp's `mmproj` GGUF, general.architecture = clip) bound to the
 * language model it was loaded for (opaque). It holds a reference to its model: zf_model_free()
 * before zf_mmproj_free() is fine, the model goes with the last of them. Immutable after
 * zf_mmproj_load(): any number of threads may call zf_image_embed() on it at once (each call
 * works on an encoder of its own, taken from the projector's pool and returned after).
 * zf_mmproj_free() may be called from any thread, but not while a call on it is running.
 * Projector types loaded: "gemma3" (Gemma 3's SigLIP encoder, 896 px, 256 tokens per image),
 * "idefics3" (SmolVLM's SigLIP encoder: an image cut into image_size tiles plus an overview,
 * each giving zf_mmproj_summary::n_tokens rows after the pixel shuffle), "pixtral" and "gemma4v"
 * (each image at its own size: the rows depend on it), "lfm2" (LFM2-VL, its own size; over
 * twice its token budget cut into 512 px tiles plus a thumbnail, as libmtmd),
 * "qwen2.5vl_merger" (Qwen2.5-VL: each image
 * at its own size, placed at M-RoPE positions by zf_session_eval_image() and chat turns),
 * "qwen3vl_merger" (Qwen3-VL: the same, each row carrying its deepstack features), and the audio
 * types "ultravox", "qwen2a", "voxtral" and "gemma4a" (Gemma 4's conformer; also the audio tower
 * of Gemma 4's two-tower files, which load as one projector of both modalities)
 * (zf_audio_embed()); see doc/vision.md.
 */
typedef struct zf_mmproj zf_mmproj;

/**
 * @brief Loads a projector file for `model` and checks that it belongs to it: the projector's
 * output width must be the model's embedding width and its type the model's family (a "gemma3"
 * projector goes with a "gemma3" model, an "idefics3" one with a "llama" model, a "pixtral" one
 * with a "llama" or "mistral3" model, a "gemma4v" one with "gemma4", an "lfm2" one with "lfm2",
 * a "qwen2.5vl_merger" one with "qwen2vl", a "qwen3vl_merger" one with "qwen3vl", a "gemma4a"
 * one with "gemma4"); a mismatch names both
 * sides. Thread-safe.
 * @param model The language model (its reference is held until zf_mmproj_free()). Required.
 * @param path The mmproj file (NUL-terminated UTF-8).
 * @param flags Reserved; must be 0.
 * @param out Receives the projector (NULL on failure). Required.
 * @return ::ZF_OK; ::ZF_ERR_INVALID_ARGUMENT (NULL model/path/out, nonzero flags, a projector of
 *         another model: width or family); ::ZF_ERR_IO (cannot open or map); ::ZF_ERR_FORMAT (not
 *         a clip GGUF, a missing or misshapen key or tensor: the message names it);
 *         ::ZF_ERR_UNSUPPORTED (a projector type not loaded yet, named); ::ZF_ERR_OUT_OF_MEMORY.
 */
ZF_API zf_status zf_mmproj_load(zf_model* model, const char* path, uint32_t flags, zf_mmproj** out);

/** @brief Releases the projector (and its reference to the model). NULL is a no-op. Any thread. */
ZF_API void zf_mmproj_free(zf_mmproj* mmproj);

/** What zf_mmproj_info() reports about a projector. Append-only; `struct_size` first. */
typedef struct zf_mmproj_summary {
  uint32_t struct_size;       /**< Set by the caller to sizeof(zf_mmproj_summary). */
  int32_t image_size;         /**< The encoder's square input side in pixels (896 for Gemma 3); 0 for
                                   types that take each image at its own size ("gemma4v", "pixtral"). */
  int32_t patch_size;         /**< Pixels per patch side (14). */
  int32_t n_tokens;           /**< Embeddings per encoder input as placed in the prompt: per image for
                                   "gemma3" (256), per tile and overview for "idefics3" (an image
                                   gives zf_image_embed()'s *n_tokens); 0 where it depends on the
                                   image's size ("gemma4v", "pixtral"). */
  int32_t n_embd;             /**< Width of each embedding: the language model's n_embd (Qwen3-VL:
                                   n_embd x (1 + deepstack layers), its rows' deepstack features
                                   following the input row). */
  int32_t n_embd_vision;      /**< The vision encoder's own width. */
  int32_t n_layer;            /**< Vision encoder blocks. */
  uint32_t reserved;          /**< Padding; written as 0. */
  const char* projector_type; /**< clip.projector_type, e.g. "gemma3"; owned by the projector. */
  /* Since 0.7 (audio projectors): */
  uint32_t modalities;        /**< What it encodes: ::ZF_MODALITY_IMAGE and/or ::ZF_MODALITY_AUDIO. */
  int32_t sample_rate;        /**< Audio projectors: the PCM rate they take (16000); else 0. */
} zf_mmproj_summary;

/** @name Projector modalities (zf_mmproj_summary::modalities). */
/**@{*/
#define ZF_MODALITY_IMAGE 1u /**< zf_image_embed(), zf_session_eval_image(), image_url parts. */
#define ZF_MODALITY_AUDIO 2u /**< zf_audio_embed(), zf_session_eval_audio(), input_audio parts. */
/**@}*/

/**
 * @brief Describes a projector (see ::zf_mmproj_summary). Fields beyond info->struct_size are
 * not written; on return it is the size filled. Thread-safe.
 * @return ::ZF_OK; ::ZF_ERR_INVALID_ARGUMENT (NULL arguments, struct_size too small).
 */
ZF_API zf_status zf_mmproj_info(const zf_mmproj* mmproj, zf_mmproj_summary* info);

/** @name Image formats (zf_image::format). */
/**@{*/
/** An encoded file's bytes: JPEG, PNG, GIF (first frame) or BMP, told apart by their first
 *  bytes (WebP is recognized and refused: no decoder yet). width/height must be 0. */
#define ZF_IMAGE_ENCODED 0u
/** Raw pixels: height rows of width pixels, 3 bytes each (R, G, B), no padding; size must be
 *  width * height * 3. */
#define ZF_IMAGE_RGB8 1u
/**@}*/

/** The largest image zf_image_embed() takes, in pixels (width x height): 8192 x 8192. Checked
 *  from an encoded file's header before any pixel is decoded. */
#define ZF_IMAGE_MAX_PIXELS 67108864

/** An image for zf_image_embed(): encoded bytes or RGB8 pixels. Borrowed for the call only.
 *  Append-only; `struct_size` first. */
typedef struct zf_image {
  uint32_t struct_size;   /**< sizeof(zf_image) as the caller compiled it. */
  uint32_t format;        /**< ::ZF_IMAGE_ENCODED or ::ZF_IMAGE_RGB8. */
  const void* data;       /**< The bytes. Required. */
  size_t size;            /**< Their count (nonzero). */
  uint32_t width;         /**< ::ZF_IMAGE_RGB8: pixels per row; else 0. */
  uint32_t height;        /**< ::ZF_IMAGE_RGB8: rows; else 0. */
} zf_image;

/**
 * @brief The image's embeddings as the language model would take them in the prompt: *n_tokens
 * rows of zf_mmproj_summary::n_embd floats, row-major, into a caller buffer. The image is
 * decoded, preprocessed as libmtmd does for the projector type (Gemma 3: scaled into 896 x 896
 * keeping its aspect ratio, centred on black, normalized by the file's mean/std; Idefics3: cut
 * into tiles and an overview, whose rows follow one another in placement order) and encoded.
 * The size needed is known before encoding: a call with a small buffer costs no encode.
 * Thread-safe (see ::zf_mmproj).
 * @param mmproj The projector. Required.
 * @param image The image. Required.
 * @param n_threads Worker threads for the encode (0 = the machine's cores, at most 8).
 * @param out Output floats (may be NULL when cap is 0).
 * @param cap Capacity of `out` in floats.
 * @param needed Receives the floats written, or needed on ::ZF_ERR_BUFFER_TOO_SMALL. Required.
 * @param n_tokens Optional; receives the rows (also on ::ZF_ERR_BUFFER_TOO_SMALL).
 * @return ::ZF_OK; ::ZF_ERR_BUFFER_TOO_SMALL; ::ZF_ERR_INVALID_ARGUMENT (NULL arguments, a
 *         struct_size too small, an unknown format, empty data, width/height that do not fit the
 *         format or size, an unknown or unsupported image container such as WebP, a zero-size
 *         image, more pixels than ::ZF_IMAGE_MAX_PIXELS, a negative n_threads); ::ZF_ERR_FORMAT
 *         (corrupt or truncated image bytes: the decoder's reason); ::ZF_ERR_OUT_OF_MEMORY.
 */
ZF_API zf_status zf_image_embed(const zf_mmproj* mmproj, const zf_image* image, int32_t n_threads, float* out,
                                size_t cap, size_t* needed, int32_t* n_tokens);

/** @name Flags of zf_session_eval_embeddings(). */
/**@{*/
/** The rows attend to each other both ways (not causally), as Gemma 3 attends among one
 *  image's tokens; earlier positions attend as usual, later ones do not see them differently. */
#define ZF_EMBD_BIDIRECTIONAL 1u
/**@}*/

/**
 * @brief Appends rows of input embeddings at the end of the session's conversation in place of
 * token embeddings (as llama.cpp decodes an image's embeddings: taken as they are, without the
 * model's token-embedding scale), one position each, in one step, and writes the last position's
 * logits like zf_session_eval(). For callers that keep zf_image_embed()'s output: with the
 * projector's begin/end marker tokens around it (Gemma 3: `<start_of_image>` before,
 * `<end_of_image>` after, no newlines) this is what zf_session_eval_image() does.
 *
 * The positions appear in zf_session_tokens() as negative values (no token is negative): a hash
 * of all the rows' contents and of the flags mixed with the position within them, so a
 * conversation compared with a later prompt (chat turns, the model's prefix cache) matches these
 * positions only against the same embeddings evaluated the same way. zf_session_eval() never
 * takes such values; zf_session_truncate() may cut anywhere (a chat turn whose prompt repeats
 * the image continues a cut span exactly); zf_session_save_state() keeps them and their KV rows.
 * CPU engine only in this version (::ZF_ERR_UNSUPPORTED on CUDA).
 * @param session The session. Required.
 * @param embd n_tokens rows of `width` floats, row-major. Required.
 * @param n_tokens Rows (1 to the context left; with ::ZF_EMBD_BIDIRECTIONAL at most 512, one step).
 * @param width Floats per row: must be the model's n_embd.
 * @param flags 0 or ::ZF_EMBD_BIDIRECTIONAL.
 * @param logits Receives the last position's n_vocab logits (may be NULL when cap is 0).
 * @param cap Capacity of `logits` in floats (0, or at least n_vocab).
 * @return ::ZF_OK; ::ZF_ERR_CONTEXT_FULL (nothing appended); ::ZF_ERR_BUFFER_TOO_SMALL;
 *         ::ZF_ERR_CANCELLED; ::ZF_ERR_INVALID_ARGUMENT (NULL arguments, width not n_embd,
 *         n_tokens 0 or over the step, unknown flags, a busy session); ::ZF_ERR_UNSUPPORTED
 *         (a device engine; a model with M-RoPE sections, qwen2vl / qwen3vl, whose image rows take
 *         2D positions from the image's grid, which rows alone do not give: zf_session_eval_image()
 *         and chat turns place them there; ::ZF_EMBD_BIDIRECTIONAL on a model with recurrent
 *         layers). Recurrent models
 *         (LFM2, Granite 4 H, Qwen 3.5) take causal rows; zf_session_truncate() then evaluates the
 *         rows again from a copy the session keeps, except in a session restored by
 *         zf_session_load_state() (its rows are not in the file): a cut that would need them is
 *         ::ZF_ERR_UNSUPPORTED naming the position.
 */
ZF_API zf_status zf_session_eval_embeddings(zf_session* session, const float* embd, size_t n_tokens, size_t width,
                                            uint32_t flags, float* logits, size_t cap);

/**
 * @brief Appends one image at the end of the session as libmtmd places it: the projector's
 * begin marker text (tokenized with special tokens; Gemma 3: `<start_of_image>`), the image's
 * embeddings (zf_image_embed(); Gemma 3: 256 positions attending to each other both ways),
 * then the end marker (`<end_of_image>`); for Idefics3 each tile's marker
 * (`<fake_token_around_image><row_R_col_C>`) and rows, `\n` between rows of tiles, then
 * `\n\n<fake_token_around_image><global-img>`, the overview's rows and
 * `<fake_token_around_image>`, all causal; for a tiled LFM2-VL image `<|image_start|>`, each
 * tile's `<|img_row_R_col_C|>` and rows, `<|img_thumbnail|>`, the thumbnail's rows and
 * `<|image_end|>`; for Qwen2.5-VL `<|vision_start|>`, the rows (causal)
 * at M-RoPE positions (t, t + token row, t + token column; t the next position) and
 * `<|vision_end|>` at t + max(rows, columns) of tokens, where the text goes on (so
 * zf_session_n_past(), which counts entries, runs ahead of the positions after it); the last
 * position's logits written like zf_session_eval(). With zf_session_eval() before and zf_generate() after (which continues the
 * session) this is the raw-prompt route for a prompt with images. The image is encoded with the
 * model's default thread count; the projector's cache of recent images is used (see
 * zf_turn_params::mmproj).
 * @param session The session. Required.
 * @param mmproj The projector: it must belong to the session's model. Required.
 * @param image The image (see ::zf_image). Required.
 * @param logits Receives the last position's n_vocab logits (may be NULL when cap is 0).
 * @param cap Capacity of `logits` in floats (0, or at least n_vocab).
 * @return As zf_session_eval_embeddings() and zf_image_embed(); ::ZF_ERR_INVALID_ARGUMENT also
 *         for a projector of another model (both named).
 */
ZF_API zf_status zf_session_eval_image(zf_session* session, const zf_mmproj* mmproj, const zf_image* image,
                                       float* logits, size_t cap);

/* ---------------------------------------------------------------------------------------------
 * Audio: Whisper-encoder projectors (ultravox, qwen2a, voxtral) and Gemma 4's (gemma4a) (since 0.7)
 * ------------------------------------------------------------------------------------------- */

/** The longest clip zf_audio_embed() and zf_session_eval_audio() take: 10 minutes at 16 kHz. */
#define ZF_AUDIO_MAX_SAMPLES 9600000
/** The shortest: 160 samples (10 ms, one mel hop). */
#define ZF_AUDIO_MIN_SAMPLES 160

/**
 * @brief A clip's embeddings as the language model would take them in the prompt: *n_tokens rows
 * of zf_mmproj_summary::n_embd floats, row-major, into a caller buffer. The samples go through
 * libmtmd's Whisper preprocessing (log-mel with clip.audio.num_mel_bins bins over the clip and
 * 30 s of silence, cut into 30 s chunks: a clip of n samples makes ((n + 480000) / 160 + 1) /
 * 3000 chunks) and each chunk through the encoder and projector; the chunks' rows follow each
 * other (ultravox and voxtral as synthesized here: 375 rows per chunk; qwen2a 750; in general
 * 1500 positions, halved by qwen2a's and voxtral's pooling, divided by the stack factor).
 * gemma4a differs: its own log-mel (512-point FFT, HTK filters) over each 30 s piece alone, not
 * padded, and a conformer whose two stride-2 convolutions give a row per 40 ms (a 4 s clip: 100
 * rows).
 * The size needed is known before encoding: a call with a small buffer costs no encode.
 * Thread-safe (see ::zf_mmproj).
 * @param mmproj An audio projector (zf_mmproj_summary::modalities has ::ZF_MODALITY_AUDIO). Required.
 * @param pcm n_samples mono samples at 16 kHz, nominally in [-1, 1] (zf_wav_decode() converts
 *        WAV files; MP3/FLAC/Ogg are the caller's to decode). Required.
 * @param n_samples ::ZF_AUDIO_MIN_SAMPLES to ::ZF_AUDIO_MAX_SAMPLES.
 * @param n_threads Worker threads for the encode (0 = the machine's cores, at most 8).
 * @param out Output floats (may be NULL when cap is 0).
 * @param cap Capacity of `out` in floats.
 * @param needed Receives the floats written, or needed on ::ZF_ERR_BUFFER_TOO_SMALL. Required.
 * @param n_tokens Optional; receives the rows (also on ::ZF_ERR_BUFFER_TOO_SMALL).
 * @return ::ZF_OK; ::ZF_ERR_BUFFER_TOO_SMALL; ::ZF_ERR_INVALID_ARGUMENT (NULL arguments, an image
 *         projector, too few or too many samples (the limit named), a NaN or infinite sample
 *         (its index named), a negative n_threads); ::ZF_ERR_OUT_OF_MEMORY.
 */
ZF_API zf_status zf_audio_embed(const zf_mmproj* mmproj, const float* pcm, size_t n_samples, int32_t n_threads,
                                float* out, size_t cap, size_t* needed, int32_t* n_tokens);

/**
 * @brief Appends one clip at the end of the session as libmtmd places it: the projector's begin
 * marker text (tokenized with special tokens; qwen2a `<|audio_bos|>`, voxtral `[BEGIN_AUDIO]`,
 * gemma4a `<|audio>`, ultravox none), the clip's rows (zf_audio_embed(), attending causally like
 * text), then the end marker (qwen2a `<|audio_eos|>`, gemma4a `<audio|>`); the last position's
 * logits written like zf_session_eval().
 * The positions appear in zf_session_tokens() as zf_session_eval_embeddings() describes (a hash
 * of the rows). The clip is encoded with the model's default thread count.
 * @param session The session. Required.
 * @param mmproj An audio projector of the session's model. Required.
 * @param pcm n_samples mono samples at 16 kHz (see zf_audio_embed()). Required.
 * @param n_samples ::ZF_AUDIO_MIN_SAMPLES to ::ZF_AUDIO_MAX_SAMPLES.
 * @param logits Receives the last position's n_vocab logits (may be NULL when cap is 0).
 * @param cap Capacity of `logits` in floats (0, or at least n_vocab).
 * @return As zf_session_eval_embeddings() and zf_audio_embed(); ::ZF_ERR_INVALID_ARGUMENT also
 *         for a projector of another model or an image projector.
 */
ZF_API zf_status zf_session_eval_audio(zf_session* session, const zf_mmproj* mmproj, const float* pcm,
                                       size_t n_samples, float* logits, size_t cap);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ZERFOO_H */

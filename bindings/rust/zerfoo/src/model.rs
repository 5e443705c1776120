//! Models: loading, facts, metadata, the tokenizer and chat templates.
use std::ffi::{c_char, CStr, CString};
use std::path::Path;
use std::ptr::{self, NonNull};
use std::sync::Arc;

use zerfoo_sys as sys;

use crate::error::{check, Error, ErrorCode, Result};
use crate::session::{Constraint, Session, SessionOptions};

/// A token id.
pub type Token = i32;

/// Where a model runs.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Device {
    /// The GPU if usable, else the CPU.
    #[default]
    Auto,
    /// The CPU engine.
    Cpu,
    /// The CUDA engine (loading fails with [`ErrorCode::Backend`] when unavailable).
    Cuda,
}

impl Device {
    pub(crate) fn raw(self) -> i32 {
        match self {
            Device::Auto => sys::ZF_DEVICE_AUTO,
            Device::Cpu => sys::ZF_DEVICE_CPU,
            Device::Cuda => sys::ZF_DEVICE_CUDA,
        }
    }

    fn from_raw(v: i32) -> Device {
        if v == sys::ZF_DEVICE_CUDA {
            Device::Cuda
        } else {
            Device::Cpu
        }
    }
}

/// Options for [`Model::load`]. Build with `..Default::default()` (fields may be added).
///
/// ```
/// let opts = zerfoo::ModelOptions { n_threads: 2, ..Default::default() };
/// assert!(!opts.vocab_only);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ModelOptions {
    /// The compute device (default [`Device::Auto`]).
    pub device: Device,
    /// CUDA device ordinal.
    pub gpu_index: i32,
    /// CPU threads sessions use by default; 0 = the physical cores.
    pub n_threads: i32,
    /// Load only metadata and the tokenizer (no sessions can be created).
    pub vocab_only: bool,
    /// Read the file into memory instead of mapping it.
    pub no_mmap: bool,
    /// Batched decode (continuous batching): with 2 or more, generations on different sessions
    /// of the model running on different threads share each decode step, up to `max_batch`
    /// sequences per step (the weights are read once for all of them). Each call still gets its
    /// own results and callbacks, and greedy output is the same alone or in a batch. 0 or 1 =
    /// off (the default); at most 64, else [`Model::load`] fails with
    /// [`ErrorCode::InvalidArgument`]. CPU engine only (ignored on CUDA).
    ///
    /// ```
    /// let opts = zerfoo::ModelOptions { max_batch: 8, ..Default::default() };
    /// assert_eq!(opts.max_batch, 8);
    /// ```
    pub max_batch: i32,
    /// The prefix cache's bound in MiB (`zf_model_params.prefix_cache_mib`): the KV rows of full
    /// 64-token blocks that sessions of the model evaluated are kept, keyed by the tokens of the
    /// block and of everything before it, and a session whose prompt continues its history with
    /// cached blocks copies them instead of computing them (a shared system prompt is evaluated
    /// once for every session). Reuse is exact: the logits are bit for bit those of evaluating
    /// the prompt (sessions with [`SessionOptions::fast_prefill`] take no part). Least recently
    /// used blocks are dropped beyond this many MiB. 0 = the default (256 MiB), -1 = off; below
    /// -1 or above 1048576, [`Model::load`] fails with [`ErrorCode::InvalidArgument`]. A
    /// vocab-only model has no cache. See [`Model::cache_info`].
    ///
    /// ```
    /// let opts = zerfoo::ModelOptions { prefix_cache_mib: -1, ..Default::default() };
    /// assert_eq!(opts.prefix_cache_mib, -1);
    /// ```
    pub prefix_cache_mib: i32,
}

/// Facts about a loaded model ([`Model::info`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ModelInfo {
    /// The active backend.
    pub backend: Device,
    /// `general.architecture`, e.g. `"llama"`, `"gemma3"`.
    pub architecture: String,
    /// `general.name`, or empty.
    pub name: String,
    /// The quantization mix, e.g. `"Q4_K_M"`.
    pub quant: String,
    /// Number of weight elements.
    pub n_params: u64,
    /// Bytes in the GGUF file.
    pub file_size: u64,
    /// Training context length.
    pub n_ctx_train: i32,
    /// Vocabulary size.
    pub n_vocab: i32,
    /// Transformer blocks.
    pub n_layer: i32,
    /// Hidden size.
    pub n_embd: i32,
    /// Attention heads.
    pub n_head: i32,
    /// KV heads.
    pub n_head_kv: i32,
    /// Beginning-of-sequence token.
    pub token_bos: Option<Token>,
    /// End-of-sequence token.
    pub token_eos: Option<Token>,
    /// End-of-turn token.
    pub token_eot: Option<Token>,
    /// Tensors in the file.
    pub n_tensors: i32,
    /// Fill-in-the-middle tokens.
    pub fim: FimTokens,
}

/// A model's fill-in-the-middle tokens ([`ModelInfo::fim`]): from the GGUF's
/// `tokenizer.ggml.fim_*_token_id` keys or found by their text (`"<|fim_prefix|>"`, `"<PRE>"`, ...).
/// A prompt `pre` prefix `suf` suffix `mid` asks for the middle; `rep` and `sep` frame repository
/// files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub struct FimTokens {
    /// Before the prefix.
    pub pre: Option<Token>,
    /// Before the suffix.
    pub suf: Option<Token>,
    /// Before the middle (the answer).
    pub mid: Option<Token>,
    /// Padding.
    pub pad: Option<Token>,
    /// Before the repository's name.
    pub rep: Option<Token>,
    /// Before each file of the repository.
    pub sep: Option<Token>,
}

impl FimTokens {
    /// Whether the model has the prefix, suffix and middle tokens.
    pub fn has_infill(&self) -> bool {
        self.pre.is_some() && self.suf.is_some() && self.mid.is_some()
    }
}

/// The prefix cache's counters ([`Model::cache_info`]; see [`ModelOptions::prefix_cache_mib`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct CacheInfo {
    /// Tokens per cached block (64); 0 when the cache is off.
    pub block_tokens: i32,
    /// The bound in bytes ([`ModelOptions::prefix_cache_mib`]).
    pub capacity_bytes: u64,
    /// KV bytes held now.
    pub bytes: u64,
    /// Blocks held now (each once, however many sessions used it).
    pub blocks: u64,
    /// Prompt tokens copied from the cache instead of evaluated.
    pub hit_tokens: u64,
    /// Blocks stored since load.
    pub stored_blocks: u64,
    /// Blocks dropped for the bound since load.
    pub evicted_blocks: u64,
    /// Block mappings alive: sessions reading a cached block's rows in place (a block in n
    /// sessions counts n times); 0 where pages cannot be shared.
    pub mapped_blocks: u64,
}

/// One chat turn for [`Model::apply_chat_template`].
///
/// ```
/// use zerfoo::ChatMessage;
/// let turn = ChatMessage::user("Hello!");
/// assert_eq!(turn.role, "user");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ChatMessage {
    /// `"system"`, `"user"` or `"assistant"`.
    pub role: String,
    /// The turn's text.
    pub content: String,
}

impl ChatMessage {
    /// A message with any role.
    pub fn new(role: impl Into<String>, content: impl Into<String>) -> ChatMessage {
        ChatMessage {
            role: role.into(),
            content: content.into(),
        }
    }
    /// A `"system"` message.
    pub fn system(content: impl Into<String>) -> ChatMessage {
        ChatMessage::new("system", content)
    }
    /// A `"user"` message.
    pub fn user(content: impl Into<String>) -> ChatMessage {
        ChatMessage::new("user", content)
    }
    /// An `"assistant"` message.
    pub fn assistant(content: impl Into<String>) -> ChatMessage {
        ChatMessage::new("assistant", content)
    }
}

pub(crate) struct ModelInner {
    pub(crate) ptr: NonNull<sys::zf_model>,
}

// SAFETY: a zf_model is immutable after load and may be shared by any number of threads
// (zerfoo.h); zf_model_free may run on any thread.
unsafe impl Send for ModelInner {}
unsafe impl Sync for ModelInner {}

impl Drop for ModelInner {
    fn drop(&mut self) {
        // SAFETY: every session holds a clone of the Arc owning this, so none is left.
        unsafe { sys::zf!(zf_model_free(self.ptr.as_ptr())) }
    }
}

/// A loaded GGUF model: immutable, cheap to clone (a reference count), and shareable across
/// threads (`Send + Sync`); each thread generates through its own [`Session`].
/// Freed when the last clone and the last session are dropped.
///
/// ```
/// use zerfoo::{GenerateOptions, Model, ModelOptions, SessionOptions};
/// # let Some(path) = std::env::var_os("ZERFOO_TEST_MODEL") else { return Ok(()) };
/// let model = Model::load(path, &ModelOptions::default())?;
/// let mut session = model.session(&SessionOptions::default())?;
/// let out = session.generate("The capital of France is", &GenerateOptions::greedy(16))?;
/// println!("{}", out.text);
/// # Ok::<(), zerfoo::Error>(())
/// ```
#[derive(Clone)]
pub struct Model {
    pub(crate) inner: Arc<ModelInner>,
}

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model")
            .field("ptr", &self.inner.ptr)
            .finish()
    }
}

pub(crate) fn c_string(what: &str, s: &str) -> Result<CString> {
    CString::new(s).map_err(|_| {
        Error::new(
            ErrorCode::InvalidArgument,
            format!("{what} contains a NUL byte"),
        )
    })
}

/// Calls `f(buf, cap, needed)` until the output fits; returns the bytes without the NUL when
/// `nul_terminated`.
pub(crate) fn read_buffer(
    nul_terminated: bool,
    mut f: impl FnMut(*mut c_char, usize, *mut usize) -> i32,
) -> Result<Vec<u8>> {
    let mut buf = vec![0u8; 256];
    loop {
        let mut needed = 0usize;
        let st = f(buf.as_mut_ptr().cast(), buf.len(), &mut needed);
        if st == sys::ZF_ERR_BUFFER_TOO_SMALL && needed > buf.len() {
            buf.resize(needed, 0);
            continue;
        }
        check(st)?;
        let n = if nul_terminated {
            needed.saturating_sub(1)
        } else {
            needed
        };
        buf.truncate(n.min(buf.len()));
        return Ok(buf);
    }
}

fn owned(p: *const c_char) -> String {
    if p.is_null() {
        String::new()
    } else {
        // SAFETY: strings in zf_model_summary are NUL-terminated and live as long as the model.
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }
}

impl Model {
    /// Memory-maps and validates a GGUF file and builds its tokenizer and weights.
    ///
    /// Errors carry the library's message: [`ErrorCode::Io`] (cannot open), [`ErrorCode::Format`]
    /// (not a valid GGUF file), [`ErrorCode::Unsupported`], [`ErrorCode::Backend`],
    /// [`ErrorCode::Library`] (libzerfoo missing or of an incompatible version).
    ///
    /// ```
    /// use zerfoo::{ErrorCode, Model, ModelOptions};
    /// let err = Model::load("/no/such/model.gguf", &ModelOptions::default()).unwrap_err();
    /// assert_eq!(err.code(), ErrorCode::Io);
    /// assert!(err.message().contains("/no/such/model.gguf"));
    /// ```
    pub fn load(path: impl AsRef<Path>, options: &ModelOptions) -> Result<Model> {
        crate::init()?;
        let path = path.as_ref();
        let c_path = c_path(path, "model")?;
        // SAFETY: zf_model_params_init fills the struct it is given.
        let mut p: sys::zf_model_params = unsafe { std::mem::zeroed() };
        check(unsafe {
            sys::zf!(zf_model_params_init(
                &mut p,
                std::mem::size_of::<sys::zf_model_params>()
            ))
        })?;
        p.device = options.device.raw();
        p.gpu_index = options.gpu_index;
        p.n_threads = options.n_threads;
        p.max_batch = options.max_batch;
        p.prefix_cache_mib = options.prefix_cache_mib;
        p.flags = 0;
        if options.vocab_only {
            p.flags |= sys::ZF_MODEL_VOCAB_ONLY as u32;
        }
        if options.no_mmap {
            p.flags |= sys::ZF_MODEL_NO_MMAP as u32;
        }
        let mut out = ptr::null_mut();
        // SAFETY: path and params are valid for the call; out receives an owned handle.
        check(unsafe { sys::zf!(zf_model_load(c_path.as_ptr(), &p, &mut out)) })?;
        let ptr = NonNull::new(out)
            .ok_or_else(|| Error::new(ErrorCode::Internal, "zf_model_load returned NULL"))?;
        Ok(Model {
            inner: Arc::new(ModelInner { ptr }),
        })
    }

    pub(crate) fn raw(&self) -> *mut sys::zf_model {
        self.inner.ptr.as_ptr()
    }

    /// Facts about the model.
    ///
    /// ```
    /// # let Some(model) = zerfoo::__doc_model() else { return Ok(()) };
    /// let info = model.info()?;
    /// println!("{} with {} layers", info.architecture, info.n_layer);
    /// # Ok::<(), zerfoo::Error>(())
    /// ```
    pub fn info(&self) -> Result<ModelInfo> {
        // SAFETY: a zeroed summary with struct_size set is what zf_model_info expects.
        let mut s: sys::zf_model_summary = unsafe { std::mem::zeroed() };
        s.struct_size = std::mem::size_of::<sys::zf_model_summary>() as u32;
        check(unsafe { sys::zf!(zf_model_info(self.raw(), &mut s)) })?;
        let tok = |t: i32| (t >= 0).then_some(t);
        Ok(ModelInfo {
            backend: Device::from_raw(s.backend),
            architecture: owned(s.architecture),
            name: owned(s.name),
            quant: owned(s.quant),
            n_params: s.n_params,
            file_size: s.file_size,
            n_ctx_train: s.n_ctx_train,
            n_vocab: s.n_vocab,
            n_layer: s.n_layer,
            n_embd: s.n_embd,
            n_head: s.n_head,
            n_head_kv: s.n_head_kv,
            token_bos: tok(s.token_bos),
            token_eos: tok(s.token_eos),
            token_eot: tok(s.token_eot),
            n_tensors: s.n_tensors,
            // An older library fills a smaller struct: no FIM ids then.
            fim: if s.struct_size as usize >= std::mem::size_of::<sys::zf_model_summary>() {
                FimTokens {
                    pre: tok(s.token_fim_pre),
                    suf: tok(s.token_fim_suf),
                    mid: tok(s.token_fim_mid),
                    pad: tok(s.token_fim_pad),
                    rep: tok(s.token_fim_rep),
                    sep: tok(s.token_fim_sep),
                }
            } else {
                FimTokens::default()
            },
        })
    }

    /// The prefix cache's counters now ([`ModelOptions::prefix_cache_mib`]).
    ///
    /// ```
    /// # let Some(model) = zerfoo::__doc_model() else { return Ok(()) };
    /// let cache = model.cache_info()?;
    /// println!("{} prompt tokens reused, {} blocks held", cache.hit_tokens, cache.blocks);
    /// # Ok::<(), zerfoo::Error>(())
    /// ```
    pub fn cache_info(&self) -> Result<CacheInfo> {
        // SAFETY: a zeroed zf_cache_info with struct_size set is what zf_model_cache_info expects.
        let mut c: sys::zf_cache_info = unsafe { std::mem::zeroed() };
        c.struct_size = std::mem::size_of::<sys::zf_cache_info>() as u32;
        check(unsafe { sys::zf!(zf_model_cache_info(self.raw(), &mut c)) })?;
        Ok(CacheInfo {
            block_tokens: c.block_tokens,
            capacity_bytes: c.capacity_bytes,
            bytes: c.bytes,
            blocks: c.blocks,
            hit_tokens: c.hit_tokens,
            stored_blocks: c.stored_blocks,
            evicted_blocks: c.evicted_blocks,
            mapped_blocks: c.mapped_blocks,
        })
    }

    /// A GGUF metadata value as text (numbers in decimal, arrays as `[a, b, ...]`), or `None`
    /// when the key does not exist.
    ///
    /// ```
    /// # let Some(model) = zerfoo::__doc_model() else { return Ok(()) };
    /// assert!(model.meta("general.architecture")?.is_some());
    /// assert_eq!(model.meta("no.such.key")?, None);
    /// # Ok::<(), zerfoo::Error>(())
    /// ```
    pub fn meta(&self, key: &str) -> Result<Option<String>> {
        let key = c_string("metadata key", key)?;
        match read_buffer(true, |buf, cap, needed| unsafe {
            sys::zf!(zf_model_meta(self.raw(), key.as_ptr(), buf, cap, needed))
        }) {
            Ok(v) => Ok(Some(String::from_utf8_lossy(&v).into_owned())),
            Err(e) if e.code() == ErrorCode::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Compiles `constraint` for this model's vocabulary and discards it
    /// (`zf_constraint_check`): `Ok(())` when [`GenerateOptions::constraint`] would accept it,
    /// [`ErrorCode::InvalidArgument`] with the compiler's message for an invalid one,
    /// [`ErrorCode::Unsupported`] for a library built without constraints. The first
    /// constraint on a model builds llguidance's view of its vocabulary (kept with the model).
    ///
    /// ```
    /// # let Some(model) = zerfoo::__doc_model() else { return Ok(()) };
    /// use zerfoo::{Constraint, ErrorCode};
    /// match model.check_constraint(&Constraint::Regex("([a-z".into())) {
    ///     Err(e) => assert!(matches!(e.code(), ErrorCode::InvalidArgument | ErrorCode::Unsupported)),
    ///     Ok(()) => unreachable!(),
    /// }
    /// # Ok::<(), zerfoo::Error>(())
    /// ```
    ///
    /// [`GenerateOptions::constraint`]: crate::GenerateOptions::constraint
    pub fn check_constraint(&self, constraint: &Constraint) -> Result<()> {
        let text = constraint.c_text()?;
        // SAFETY: the model is alive; text is NUL-terminated and outlives the call.
        check(unsafe {
            sys::zf!(zf_constraint_check(
                self.raw(),
                constraint.kind(),
                text.as_ptr()
            ))
        })
    }

    /// Converts text to token ids. `add_special` adds BOS/EOS as the model asks;
    /// `parse_special` matches special-token text such as `<|im_end|>` as tokens.
    ///
    /// ```
    /// # let Some(model) = zerfoo::__doc_model() else { return Ok(()) };
    /// let tokens = model.tokenize("Hello world", false, false)?;
    /// assert_eq!(model.detokenize(&tokens, false, false)?, "Hello world");
    /// # Ok::<(), zerfoo::Error>(())
    /// ```
    pub fn tokenize(
        &self,
        text: &str,
        add_special: bool,
        parse_special: bool,
    ) -> Result<Vec<Token>> {
        self.tokenize_bytes(text.as_bytes(), add_special, parse_special)
    }

    /// [`tokenize`](Model::tokenize) for bytes that may not be UTF-8: invalid input fails with
    /// [`ErrorCode::InvalidUtf8`] and the library's message.
    ///
    /// ```
    /// # let Some(model) = zerfoo::__doc_model() else { return Ok(()) };
    /// let err = model.tokenize_bytes(b"\xff\xfe", false, false).unwrap_err();
    /// assert_eq!(err.code(), zerfoo::ErrorCode::InvalidUtf8);
    /// # Ok::<(), zerfoo::Error>(())
    /// ```
    pub fn tokenize_bytes(
        &self,
        text: &[u8],
        add_special: bool,
        parse_special: bool,
    ) -> Result<Vec<Token>> {
        let mut flags = 0u32;
        if add_special {
            flags |= sys::ZF_TOKENIZE_ADD_SPECIAL as u32;
        }
        if parse_special {
            flags |= sys::ZF_TOKENIZE_PARSE_SPECIAL as u32;
        }
        let mut tokens: Vec<Token> = vec![0; text.len() + 8];
        loop {
            let mut n = 0usize;
            // SAFETY: text and tokens are valid for their lengths during the call.
            let st = unsafe {
                sys::zf!(zf_tokenize(
                    self.raw(),
                    text.as_ptr().cast(),
                    text.len(),
                    flags,
                    tokens.as_mut_ptr(),
                    tokens.len(),
                    &mut n
                ))
            };
            if st == sys::ZF_ERR_BUFFER_TOO_SMALL && n > tokens.len() {
                tokens.resize(n, 0);
                continue;
            }
            check(st)?;
            tokens.truncate(n);
            return Ok(tokens);
        }
    }

    fn detokenize_flags(remove_special: bool, render_special: bool) -> u32 {
        let mut flags = 0u32;
        if remove_special {
            flags |= sys::ZF_DETOKENIZE_REMOVE_SPECIAL as u32;
        }
        if render_special {
            flags |= sys::ZF_DETOKENIZE_RENDER_SPECIAL as u32;
        }
        flags
    }

    /// Converts token ids to text; bytes that do not form UTF-8 become U+FFFD (use
    /// [`detokenize_bytes`](Model::detokenize_bytes) for the raw bytes).
    /// `remove_special` drops a leading BOS / trailing EOS; `render_special` renders control
    /// tokens' text. An id outside the vocabulary is [`ErrorCode::InvalidArgument`].
    pub fn detokenize(
        &self,
        tokens: &[Token],
        remove_special: bool,
        render_special: bool,
    ) -> Result<String> {
        let b = self.detokenize_bytes(tokens, remove_special, render_special)?;
        Ok(String::from_utf8(b)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()))
    }

    /// [`detokenize`](Model::detokenize) returning the raw bytes.
    pub fn detokenize_bytes(
        &self,
        tokens: &[Token],
        remove_special: bool,
        render_special: bool,
    ) -> Result<Vec<u8>> {
        let flags = Model::detokenize_flags(remove_special, render_special);
        read_buffer(true, |buf, cap, needed| unsafe {
            sys::zf!(zf_detokenize(
                self.raw(),
                tokens.as_ptr(),
                tokens.len(),
                flags,
                buf,
                cap,
                needed
            ))
        })
    }

    /// The raw bytes of one token (a byte token may be part of a UTF-8 character). Control
    /// tokens render only with `render_special`.
    ///
    /// ```
    /// # let Some(model) = zerfoo::__doc_model() else { return Ok(()) };
    /// let t = model.tokenize(" world", false, false)?;
    /// assert_eq!(model.token_to_piece(t[0], false)?, b" world");
    /// # Ok::<(), zerfoo::Error>(())
    /// ```
    pub fn token_to_piece(&self, token: Token, render_special: bool) -> Result<Vec<u8>> {
        let flags = Model::detokenize_flags(false, render_special);
        read_buffer(false, |buf, cap, needed| unsafe {
            sys::zf!(zf_token_to_piece(
                self.raw(),
                token,
                flags,
                buf,
                cap,
                needed
            ))
        })
    }

    /// Renders messages with the model's `tokenizer.chat_template`; `add_assistant` appends
    /// the prefix that opens the assistant's turn (what you want before generating a reply).
    /// An unrecognized template is [`ErrorCode::Unsupported`].
    ///
    /// ```
    /// use zerfoo::ChatMessage;
    /// # let Some(model) = zerfoo::__doc_model() else { return Ok(()) };
    /// let prompt = model.apply_chat_template(&[ChatMessage::user("Hi!")], true)?;
    /// assert!(prompt.contains("Hi!"));
    /// # Ok::<(), zerfoo::Error>(())
    /// ```
    pub fn apply_chat_template(
        &self,
        messages: &[ChatMessage],
        add_assistant: bool,
    ) -> Result<String> {
        let owned: Vec<(CString, CString)> = messages
            .iter()
            .map(|m| {
                Ok((
                    c_string("chat role", &m.role)?,
                    c_string("chat content", &m.content)?,
                ))
            })
            .collect::<Result<_>>()?;
        let raw: Vec<sys::zf_chat_message> = owned
            .iter()
            .map(|(r, c)| sys::zf_chat_message {
                role: r.as_ptr(),
                content: c.as_ptr(),
            })
            .collect();
        let flags = if add_assistant {
            sys::ZF_CHAT_ADD_ASSISTANT as u32
        } else {
            0
        };
        let b = read_buffer(true, |buf, cap, needed| unsafe {
            sys::zf!(zf_chat_apply_template(
                self.raw(),
                raw.as_ptr(),
                raw.len(),
                flags,
                buf,
                cap,
                needed
            ))
        })?;
        Ok(String::from_utf8_lossy(&b).into_owned())
    }

    /// Creates a session (a conversation: KV cache and sampler state) that borrows the model.
    ///
    /// ```
    /// # let Some(model) = zerfoo::__doc_model() else { return Ok(()) };
    /// let session = model.session(&zerfoo::SessionOptions { n_ctx: 2048, ..Default::default() })?;
    /// # Ok::<(), zerfoo::Error>(())
    /// ```
    pub fn session(&self, options: &SessionOptions) -> Result<Session<'_>> {
        Session::create(self, options)
    }

    /// A session that keeps its own reference to the model instead of borrowing it, so it
    /// can be moved into a `'static` thread or task (for example
    /// [`Session::into_async_stream`](crate::Session) with the `tokio` feature).
    pub fn session_owned(&self, options: &SessionOptions) -> Result<Session<'static>> {
        Session::create(self, options)
    }
}

/// A path as the NUL-terminated bytes the C API takes; `what` names it in the error.
pub(crate) fn c_path(path: &Path, what: &str) -> Result<CString> {
    #[cfg(unix)]
    let bytes = {
        use std::os::unix::ffi::OsStrExt;
        path.as_os_str().as_bytes().to_vec()
    };
    #[cfg(not(unix))]
    let bytes = path.to_string_lossy().into_owned().into_bytes();
    CString::new(bytes).map_err(|_| {
        Error::new(
            ErrorCode::InvalidArgument,
            format!("{what} path contains a NUL byte"),
        )
    })
}

//! Embeddings and reranking (`zf_embed`, `zf_embed_tokens`, `zf_embed_dimension`, `zf_rerank`).
use std::ffi::c_char;
use std::ptr;

use zerfoo_sys as sys;

use crate::error::{check, Error, ErrorCode, Result};
use crate::model::{Model, Token};

/// How an input's token states become one vector (`ZF_POOLING_*`).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Pooling {
    /// The file's `ARCH.pooling_type`; [`Pooling::Last`] for a generative model.
    #[default]
    Default,
    /// One vector per token: not supported by [`Model::embed`] ([`ErrorCode::Unsupported`]).
    None,
    /// The mean of every token's state.
    Mean,
    /// The first token's state (`[CLS]` of BERT models).
    Cls,
    /// The last token's state.
    Last,
    /// The first token's state through the model's classification head (rerankers): the
    /// classifier's outputs, never normalized.
    Rank,
    /// A raw `ZF_POOLING_*` value these bindings do not name.
    Other(i32),
}

impl Pooling {
    pub(crate) fn raw(self) -> i32 {
        match self {
            Pooling::Default => sys::ZF_POOLING_DEFAULT,
            Pooling::None => sys::ZF_POOLING_NONE,
            Pooling::Mean => sys::ZF_POOLING_MEAN,
            Pooling::Cls => sys::ZF_POOLING_CLS,
            Pooling::Last => sys::ZF_POOLING_LAST,
            Pooling::Rank => sys::ZF_POOLING_RANK,
            Pooling::Other(v) => v,
        }
    }
}

/// Options of [`Model::embed`], [`Model::embed_tokens`], [`Model::embed_dimension`] and
/// [`Model::rerank`] (`zf_embed_params`). The defaults are `zf_embed_params_init`'s: the
/// model's pooling, L2 normalization, every dimension, the model's threads.
///
/// ```
/// use zerfoo::{EmbedOptions, Pooling};
/// let opts = EmbedOptions { pooling: Pooling::Mean, dimensions: 256, ..Default::default() };
/// assert!(opts.normalize);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EmbedOptions {
    /// The pooling (default [`Pooling::Default`]).
    pub pooling: Pooling,
    /// L2-normalize each vector (default true; false = `ZF_EMBED_NO_NORMALIZE`).
    pub normalize: bool,
    /// 0 (default): the model's hidden size; else keep the first `dimensions` values
    /// (Matryoshka-trained models), then normalize.
    pub dimensions: u32,
    /// CPU threads for the call (0 = the model's thread count).
    pub threads: u32,
}

impl Default for EmbedOptions {
    fn default() -> Self {
        EmbedOptions {
            pooling: Pooling::Default,
            normalize: true,
            dimensions: 0,
            threads: 0,
        }
    }
}

impl EmbedOptions {
    pub(crate) fn raw(&self) -> sys::zf_embed_params {
        // SAFETY: an all-zero zf_embed_params is a valid value; zf_embed_params_init fills it.
        let mut p: sys::zf_embed_params = unsafe { std::mem::zeroed() };
        let size = std::mem::size_of::<sys::zf_embed_params>();
        unsafe { sys::zf!(zf_embed_params_init(&mut p, size)) };
        p.pooling = self.pooling.raw();
        p.flags = if self.normalize {
            0
        } else {
            sys::ZF_EMBED_NO_NORMALIZE as u32
        };
        p.dimensions = i32::try_from(self.dimensions).unwrap_or(i32::MAX);
        p.n_threads = i32::try_from(self.threads).unwrap_or(i32::MAX);
        p
    }
}

fn split(flat: Vec<f32>, n: usize, dim: usize) -> Vec<Vec<f32>> {
    if dim == 0 {
        return vec![Vec::new(); n];
    }
    flat.chunks_exact(dim).map(<[f32]>::to_vec).collect()
}

impl Model {
    /// Values per input that [`Model::embed`] returns with these options
    /// (`zf_embed_dimension`): the hidden size (or [`EmbedOptions::dimensions`]), or for
    /// [`Pooling::Rank`] the number of classifier outputs. [`ErrorCode::Unsupported`] for
    /// [`Pooling::None`] or rank pooling without a classification head;
    /// [`ErrorCode::InvalidArgument`] for a bad option.
    ///
    /// ```
    /// # let Some(model) = zerfoo::__doc_model() else { return Ok(()) };
    /// let dim = model.embed_dimension(&zerfoo::EmbedOptions::default())?;
    /// assert_eq!(dim, model.info()?.n_embd as usize);
    /// # Ok::<(), zerfoo::Error>(())
    /// ```
    pub fn embed_dimension(&self, options: &EmbedOptions) -> Result<usize> {
        let p = options.raw();
        let mut dim = 0usize;
        // SAFETY: the model is alive; p and dim outlive the call.
        check(unsafe { sys::zf!(zf_embed_dimension(self.raw(), &p, &mut dim)) })?;
        Ok(dim)
    }

    /// One pooled vector per text (`zf_embed`), L2-normalized unless
    /// [`EmbedOptions::normalize`] is false. Each text is tokenized with the model's special
    /// tokens added; the texts run batched and a text's vector does not depend on the others
    /// in the call. A generative model is pooled from its last token's state by default. No
    /// texts, a text that gives no tokens or is longer than the training context, or a bad
    /// option is [`ErrorCode::InvalidArgument`]; CPU engine only. Thread-safe.
    ///
    /// ```
    /// # let Some(model) = zerfoo::__doc_model() else { return Ok(()) };
    /// let v = model.embed(&["The cat sat on the mat."], &Default::default())?;
    /// assert_eq!(v[0].len(), model.embed_dimension(&Default::default())?);
    /// # Ok::<(), zerfoo::Error>(())
    /// ```
    pub fn embed<S: AsRef<str>>(
        &self,
        texts: &[S],
        options: &EmbedOptions,
    ) -> Result<Vec<Vec<f32>>> {
        if texts.is_empty() {
            return Err(Error::new(ErrorCode::InvalidArgument, "embed: no texts"));
        }
        let ptrs: Vec<*const c_char> = texts.iter().map(|t| t.as_ref().as_ptr().cast()).collect();
        let lens: Vec<usize> = texts.iter().map(|t| t.as_ref().len()).collect();
        let p = options.raw();
        let dim = self.embed_dimension(options)?;
        let mut flat = vec![0f32; texts.len() * dim];
        let mut needed = 0usize;
        // SAFETY: the texts, lengths and output outlive the call; cap is flat's length.
        check(unsafe {
            sys::zf!(zf_embed(
                self.raw(),
                &p,
                ptrs.as_ptr(),
                lens.as_ptr(),
                texts.len(),
                if flat.is_empty() {
                    ptr::null_mut()
                } else {
                    flat.as_mut_ptr()
                },
                flat.len(),
                &mut needed
            ))
        })?;
        Ok(split(flat, texts.len(), dim))
    }

    /// [`Model::embed`] for inputs already tokenized (`zf_embed_tokens`; nothing is added to
    /// them, each at least one token). A token outside the vocabulary is
    /// [`ErrorCode::InvalidArgument`].
    pub fn embed_tokens<T: AsRef<[Token]>>(
        &self,
        inputs: &[T],
        options: &EmbedOptions,
    ) -> Result<Vec<Vec<f32>>> {
        if inputs.is_empty() {
            return Err(Error::new(
                ErrorCode::InvalidArgument,
                "embed_tokens: no inputs",
            ));
        }
        let ptrs: Vec<*const i32> = inputs.iter().map(|t| t.as_ref().as_ptr()).collect();
        let lens: Vec<usize> = inputs.iter().map(|t| t.as_ref().len()).collect();
        let p = options.raw();
        let dim = self.embed_dimension(options)?;
        let mut flat = vec![0f32; inputs.len() * dim];
        let mut needed = 0usize;
        // SAFETY: the inputs, lengths and output outlive the call; cap is flat's length.
        check(unsafe {
            sys::zf!(zf_embed_tokens(
                self.raw(),
                &p,
                ptrs.as_ptr(),
                lens.as_ptr(),
                inputs.len(),
                if flat.is_empty() {
                    ptr::null_mut()
                } else {
                    flat.as_mut_ptr()
                },
                flat.len(),
                &mut needed
            ))
        })?;
        Ok(split(flat, inputs.len(), dim))
    }

    /// Scores `documents` against `query` with a reranker (`zf_rerank`; a model with a
    /// classification head such as bge-reranker): one unnormalized score per document, in
    /// order (higher = more relevant). [`ErrorCode::Unsupported`] for a model without a
    /// classification head. Only [`Pooling::Default`] / [`Pooling::Rank`] and
    /// [`EmbedOptions::threads`] apply. Thread-safe.
    pub fn rerank<S: AsRef<str>>(
        &self,
        query: &str,
        documents: &[S],
        options: &EmbedOptions,
    ) -> Result<Vec<f32>> {
        let ptrs: Vec<*const c_char> = documents
            .iter()
            .map(|t| t.as_ref().as_ptr().cast())
            .collect();
        let lens: Vec<usize> = documents.iter().map(|t| t.as_ref().len()).collect();
        let mut p = options.raw();
        // Reranking takes no normalization flag (scores are never normalized).
        p.flags = 0;
        let mut scores = vec![0f32; documents.len()];
        let empty: [*const c_char; 1] = [ptr::null()];
        let empty_len = [0usize; 1];
        // SAFETY: query, documents, lengths and scores outlive the call.
        check(unsafe {
            sys::zf!(zf_rerank(
                self.raw(),
                &p,
                query.as_ptr().cast(),
                query.len(),
                if ptrs.is_empty() {
                    empty.as_ptr()
                } else {
                    ptrs.as_ptr()
                },
                if lens.is_empty() {
                    empty_len.as_ptr()
                } else {
                    lens.as_ptr()
                },
                documents.len(),
                if scores.is_empty() {
                    ptr::null_mut()
                } else {
                    scores.as_mut_ptr()
                }
            ))
        })?;
        Ok(scores)
    }
}

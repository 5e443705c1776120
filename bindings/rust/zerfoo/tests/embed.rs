//! Embeddings, reranking, prompt-lookup drafts and a draft model on SmolLM2.
mod common;

use common::model;
use zerfoo::{
    Device, EmbedOptions, ErrorCode, GenerateOptions, Model, ModelOptions, Pooling, SessionOptions,
    MAX_DRAFT,
};

const TEXTS: [&str; 3] = [
    "The cat sat on the mat.",
    "Paris is the capital of France.",
    "zerfoo",
];

fn norm(v: &[f32]) -> f64 {
    v.iter()
        .map(|&x| f64::from(x) * f64::from(x))
        .sum::<f64>()
        .sqrt()
}

#[test]
fn embed_invariants() {
    let Some(model) = model() else { return };
    let d = EmbedOptions::default();
    let dim = model.embed_dimension(&d).unwrap();
    assert_eq!(dim, model.info().unwrap().n_embd as usize);
    let batch = model.embed(&TEXTS, &d).unwrap();
    assert_eq!(batch.len(), 3);
    for (i, v) in batch.iter().enumerate() {
        assert_eq!(v.len(), dim);
        assert!((norm(v) - 1.0).abs() <= 1e-5, "vector {i} norm {}", norm(v));
        let one = model.embed(&[TEXTS[i]], &d).unwrap();
        assert_eq!(&one[0], v, "text {i} alone differs from the batch");
    }
    let twice = model.embed(&[TEXTS[0], TEXTS[0]], &d).unwrap();
    assert_eq!(twice[0], twice[1]);
    assert_eq!(twice[0], batch[0]);
    // Tokens as embed tokenizes them give the same vector.
    let toks = model.tokenize(TEXTS[1], true, true).unwrap();
    assert_eq!(model.embed_tokens(&[toks], &d).unwrap()[0], batch[1]);
    // Truncation: the first 16 values, renormalized.
    let o16 = EmbedOptions {
        dimensions: 16,
        ..Default::default()
    };
    assert_eq!(model.embed_dimension(&o16).unwrap(), 16);
    let short = model.embed(&TEXTS[..1], &o16).unwrap();
    assert_eq!(short[0].len(), 16);
    let raw = model
        .embed(
            &TEXTS[..1],
            &EmbedOptions {
                normalize: false,
                ..o16
            },
        )
        .unwrap();
    let n = norm(&raw[0]);
    for (a, b) in short[0].iter().zip(&raw[0]) {
        assert!((f64::from(*a) - f64::from(*b) / n).abs() <= 1e-5);
    }
}

#[test]
fn embed_errors() {
    let Some(model) = model() else { return };
    let d = EmbedOptions::default();
    let none: [&str; 0] = [];
    assert_eq!(
        model.embed(&none, &d).unwrap_err().code(),
        ErrorCode::InvalidArgument
    );
    let dim = model.embed_dimension(&d).unwrap() as u32;
    let too_many = EmbedOptions {
        dimensions: dim + 1,
        ..Default::default()
    };
    assert_eq!(
        model.embed(&TEXTS[..1], &too_many).unwrap_err().code(),
        ErrorCode::InvalidArgument
    );
    let bad_pooling = EmbedOptions {
        pooling: Pooling::Other(42),
        ..Default::default()
    };
    assert_eq!(
        model.embed(&TEXTS[..1], &bad_pooling).unwrap_err().code(),
        ErrorCode::InvalidArgument
    );
    assert_eq!(
        model.embed_tokens(&[[-1]], &d).unwrap_err().code(),
        ErrorCode::InvalidArgument
    );
    let pool_none = EmbedOptions {
        pooling: Pooling::None,
        ..Default::default()
    };
    assert_eq!(
        model.embed_dimension(&pool_none).unwrap_err().code(),
        ErrorCode::Unsupported
    );
}

#[test]
fn rerank_needs_a_classification_head() {
    let Some(model) = model() else { return };
    let err = model
        .rerank(
            "what is a cat?",
            &["a cat is an animal", "Paris"],
            &EmbedOptions::default(),
        )
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::Unsupported, "{err}");
}

#[test]
fn drafts_keep_the_output() {
    let Some(model) = model() else { return };
    let prompt =
        "<|im_start|>user\nRepeat this text exactly: The quick brown fox jumps over the lazy dog. \
                  The quick brown fox jumps over the lazy dog.<|im_end|>\n<|im_start|>assistant\n";
    let so = SessionOptions {
        n_ctx: 256,
        n_threads: 1,
        ..Default::default()
    };
    let plain_opts = GenerateOptions::greedy(40);
    let plain = model
        .session(&so)
        .unwrap()
        .generate(prompt, &plain_opts)
        .unwrap();
    assert_eq!((plain.drafted_tokens, plain.accepted_tokens), (0, 0));
    let draft_opts = GenerateOptions {
        draft_max: 8,
        draft_min: 1,
        ..plain_opts.clone()
    };
    let drafted = model
        .session(&so)
        .unwrap()
        .generate(prompt, &draft_opts)
        .unwrap();
    assert_eq!(drafted.text, plain.text);
    assert!(
        drafted.accepted_tokens > 0 && drafted.drafted_tokens >= drafted.accepted_tokens,
        "drafted {}, accepted {}",
        drafted.drafted_tokens,
        drafted.accepted_tokens
    );
    let too_many = GenerateOptions {
        draft_max: MAX_DRAFT + 1,
        ..GenerateOptions::greedy(2)
    };
    let err = model
        .session(&so)
        .unwrap()
        .generate(prompt, &too_many)
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidArgument);
}

/// The model as its own draft (the same vocabulary): the plain greedy output, drafts kept; a
/// draft of another vocabulary (Gemma 3, when present) is refused.
#[test]
fn draft_model_keeps_the_output() {
    let Some(model) = model() else { return };
    let prompt =
        "<|im_start|>user\nWrite two sentences about the sea.<|im_end|>\n<|im_start|>assistant\n";
    let so = SessionOptions {
        n_ctx: 256,
        n_threads: 1,
        ..Default::default()
    };
    let opts = GenerateOptions {
        draft_max: 6,
        ..GenerateOptions::greedy(32)
    };
    let plain = model
        .session(&so)
        .unwrap()
        .generate(prompt, &GenerateOptions::greedy(32))
        .unwrap();
    let mut s = model.session(&so).unwrap();
    s.set_draft_model(Some(model)).unwrap();
    let drafted = s.generate(prompt, &opts).unwrap();
    assert_eq!(drafted.text, plain.text);
    assert!(
        drafted.accepted_tokens > 0 && drafted.drafted_tokens >= drafted.accepted_tokens,
        "drafted {}, accepted {}",
        drafted.drafted_tokens,
        drafted.accepted_tokens
    );
    s.set_draft_model(None).unwrap();
    let gemma_path = std::path::Path::new(&std::env::var("HOME").unwrap_or_default())
        .join(".cache/zerfoo/models/gemma-3-270m-q4_k_m.gguf");
    if !gemma_path.exists() {
        eprintln!(
            "skipping the vocabulary check: {} missing",
            gemma_path.display()
        );
        return;
    }
    let gemma = Model::load(
        &gemma_path,
        &ModelOptions {
            device: Device::Cpu,
            ..Default::default()
        },
    )
    .unwrap();
    let err = s.set_draft_model(Some(&gemma)).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidArgument, "{err}");
    assert!(err.to_string().contains("vocabulary"), "{err}");
}

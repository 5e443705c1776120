//! Every failure is a typed Error with the library's message.
mod common;

use std::io::Write;

use common::{model, PROMPT};
use zerfoo::{ErrorCode, GenerateOptions, Model, ModelOptions, SessionOptions};

#[test]
fn bad_path_is_io_error_naming_the_path() {
    let err = Model::load("/nonexistent/dir/model.gguf", &ModelOptions::default()).unwrap_err();
    assert_eq!(err.code(), ErrorCode::Io);
    assert!(
        err.message().contains("/nonexistent/dir/model.gguf"),
        "{err}"
    );
    assert!(err.to_string().contains("Io"));
    let err = Model::load("bad\0path", &ModelOptions::default()).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidArgument);
}

#[test]
fn non_gguf_file_is_format_error() {
    let path = std::env::temp_dir().join(format!("zerfoo-rs-not-gguf-{}.bin", std::process::id()));
    std::fs::File::create(&path)
        .unwrap()
        .write_all(b"this is not a GGUF file at all, just text")
        .unwrap();
    let err = Model::load(&path, &ModelOptions::default()).unwrap_err();
    std::fs::remove_file(&path).ok();
    assert_eq!(err.code(), ErrorCode::Format);
    assert!(!err.message().is_empty());
    let src: &dyn std::error::Error = &err;
    assert!(src.to_string().contains(err.message()));
}

#[test]
fn invalid_utf8_from_bytes_apis() {
    let Some(model) = model() else { return };
    let err = model
        .tokenize_bytes(b"ok \xff\xfe bad", true, true)
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidUtf8);
    assert!(!err.message().is_empty());
    let mut session = model
        .session(&SessionOptions {
            n_ctx: 256,
            ..Default::default()
        })
        .unwrap();
    let err = session
        .generate_bytes(b"\xc3\x28", &GenerateOptions::greedy(4))
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidUtf8);
    let err = session
        .stream_bytes(b"\xe2\x82", &GenerateOptions::greedy(4))
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidUtf8);
    assert_eq!(session.n_past().unwrap(), 0, "nothing evaluated");
}

#[test]
fn prompt_longer_than_the_context() {
    let Some(model) = model() else { return };
    let mut session = model
        .session(&SessionOptions {
            n_ctx: 32,
            ..Default::default()
        })
        .unwrap();
    let long = "word ".repeat(100);
    let err = session
        .generate(&long, &GenerateOptions::greedy(4))
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::ContextFull);
    assert!(err.message().contains("does not fit"), "{err}");
    let err = session
        .stream(&long, &GenerateOptions::greedy(4))
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::ContextFull);
    // The session is untouched and still works.
    assert_eq!(session.n_past().unwrap(), 0);
    assert!(!session
        .generate(PROMPT, &GenerateOptions::greedy(4))
        .unwrap()
        .text
        .is_empty());
}

#[test]
fn bad_options_are_invalid_argument() {
    let Some(model) = model() else { return };
    let mut session = model
        .session(&SessionOptions {
            n_ctx: 64,
            ..Default::default()
        })
        .unwrap();
    let bad = GenerateOptions {
        temperature: -1.0,
        ..GenerateOptions::greedy(4)
    };
    let err = session.generate(PROMPT, &bad).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidArgument);
    assert!(err.message().contains("temperature"), "{err}");
    let nul = GenerateOptions {
        stop: vec!["a\0b".into()],
        ..GenerateOptions::greedy(4)
    };
    assert_eq!(
        session.generate(PROMPT, &nul).unwrap_err().code(),
        ErrorCode::InvalidArgument
    );
    let err = session
        .generate("", &GenerateOptions::greedy(4))
        .unwrap_err();
    assert_eq!(
        err.code(),
        ErrorCode::InvalidArgument,
        "empty prompt, nothing to continue"
    );
    let err = model.detokenize(&[i32::MAX], false, false).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidArgument);
    // A vocab-only model has no sessions.
    let vocab = Model::load(
        common::model_path().unwrap(),
        &ModelOptions {
            vocab_only: true,
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(
        vocab
            .session(&SessionOptions::default())
            .unwrap_err()
            .code(),
        ErrorCode::InvalidArgument
    );
}

#[test]
fn max_batch_out_of_range_is_invalid_argument() {
    let Some(path) = common::model_path() else {
        return;
    };
    let options = ModelOptions {
        max_batch: 65,
        ..Default::default()
    };
    let err = Model::load(path, &options).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidArgument);
    assert!(
        err.message().contains("max_batch") && err.message().contains("65"),
        "{err}"
    );
}

#[test]
fn prefix_cache_mib_out_of_range_is_invalid_argument() {
    let Some(path) = common::model_path() else {
        return;
    };
    for bad in [-2, (1 << 20) + 1] {
        let options = ModelOptions {
            prefix_cache_mib: bad,
            ..Default::default()
        };
        let err = Model::load(&path, &options).unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidArgument);
        assert!(err.message().contains("prefix_cache_mib"), "{err}");
    }
}

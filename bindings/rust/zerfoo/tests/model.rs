//! Model facts, metadata, the tokenizer and chat templates on SmolLM2.
mod common;

use common::model;
use zerfoo::{ChatMessage, Device};

#[test]
fn info_and_meta() {
    let Some(model) = model() else { return };
    let info = model.info().unwrap();
    assert_eq!(info.architecture, "llama");
    assert_eq!(info.backend, Device::Cpu);
    assert_eq!(info.n_vocab, 49152);
    assert_eq!(info.n_layer, 30);
    assert!(info.n_params > 100_000_000);
    assert_eq!(
        model.meta("general.architecture").unwrap().as_deref(),
        Some("llama")
    );
    assert_eq!(
        model.meta("llama.block_count").unwrap().as_deref(),
        Some("30")
    );
    assert_eq!(model.meta("no.such.key").unwrap(), None);
    // A long value exercises the buffer-growing path.
    let template = model.meta("tokenizer.chat_template").unwrap().unwrap();
    assert!(template.len() > 256 && template.contains("im_start"));
}

#[test]
fn tokenize_round_trip() {
    let Some(model) = model() else { return };
    let text = "Hello world, ünïcödé and 日本語!";
    let tokens = model.tokenize(text, false, false).unwrap();
    assert!(tokens.len() > 5);
    assert_eq!(model.detokenize(&tokens, false, false).unwrap(), text);
    let bytes: Vec<u8> = tokens
        .iter()
        .flat_map(|&t| model.token_to_piece(t, false).unwrap())
        .collect();
    assert_eq!(bytes, text.as_bytes());
    let long = "lorem ipsum ".repeat(500);
    let t = model.tokenize(&long, false, false).unwrap();
    assert_eq!(model.detokenize(&t, false, false).unwrap(), long);
    // Special-token text is parsed only when asked.
    let eos = model.info().unwrap().token_eos.unwrap();
    let with = model.tokenize("<|im_end|>", false, true).unwrap();
    assert_eq!(with, vec![eos]);
    let without = model.tokenize("<|im_end|>", false, false).unwrap();
    assert!(without.len() > 1);
}

#[test]
fn chat_template() {
    let Some(model) = model() else { return };
    let msgs = [
        ChatMessage::system("Be brief."),
        ChatMessage::user("Hi there"),
    ];
    let with = model.apply_chat_template(&msgs, true).unwrap();
    let without = model.apply_chat_template(&msgs, false).unwrap();
    assert_eq!(
        with,
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n"
    );
    assert!(with.starts_with(&without) && with.len() > without.len());
    let bad = [ChatMessage::user("nul\0inside")];
    assert_eq!(
        model.apply_chat_template(&bad, true).unwrap_err().code(),
        zerfoo::ErrorCode::InvalidArgument
    );
}

#[test]
fn version_matches_the_header() {
    let v = zerfoo::version().unwrap();
    assert_eq!(
        v,
        format!(
            "{}.{}.{}",
            zerfoo::sys::ZF_VERSION_MAJOR,
            zerfoo::sys::ZF_VERSION_MINOR,
            zerfoo::sys::ZF_VERSION_PATCH
        )
    );
    assert_eq!(zerfoo::sys::load().unwrap(), zerfoo::sys::ZF_VERSION as u32);
}

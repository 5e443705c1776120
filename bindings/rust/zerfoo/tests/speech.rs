//! Speech to text through the safe crate: Whisper tiny.en on jfk.wav gives whisper.cpp 1.8.5's
//! segments (tests/data/golden/whisper/tiny.en-jfk.json), the callback sees them in order, and
//! bad input is an error naming the problem. The model: $ZERFOO_WHISPER_MODEL (test.sh sets it
//! from scripts/fetch_models.sh whisper-tiny-en).
use std::ops::ControlFlow;
use std::path::PathBuf;

use zerfoo::serde_json::Value;
use zerfoo::{decode_wav, ErrorCode, SpeechModel, TranscribeOptions};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../..")
}

fn model() -> SpeechModel {
    let path = std::env::var_os("ZERFOO_WHISPER_MODEL")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap())
                .join(".cache/zerfoo/models/ggml-tiny.en.bin")
        });
    assert!(
        path.exists(),
        "{} is missing: scripts/fetch_models.sh whisper-tiny-en",
        path.display()
    );
    SpeechModel::load(&path).expect("load tiny.en")
}

fn golden() -> Vec<(i64, i64, String, Vec<i32>)> {
    let text =
        std::fs::read_to_string(root().join("tests/data/golden/whisper/tiny.en-jfk.json")).unwrap();
    let g: Value = zerfoo::serde_json::from_str(&text).unwrap();
    g["greedy"]["segments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["t0"].as_i64().unwrap() * 10,
                s["t1"].as_i64().unwrap() * 10,
                s["text"].as_str().unwrap().to_string(),
                s["tokens"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|t| t.as_i64().unwrap() as i32)
                    .collect(),
            )
        })
        .collect()
}

fn jfk() -> Vec<f32> {
    decode_wav(&std::fs::read(root().join("tests/data/golden/whisper/jfk.wav")).unwrap()).unwrap()
}

#[test]
fn tiny_en_matches_whisper_cpp_and_streams_segments() {
    let m = model();
    let info = m.info().unwrap();
    assert_eq!(
        (info.n_vocab, info.n_mels, info.multilingual),
        (51864, 80, false)
    );
    let pcm = jfk();
    assert_eq!(pcm.len(), 176000);
    let mut seen = Vec::new();
    let o = TranscribeOptions {
        n_threads: 2,
        ..Default::default()
    };
    let t = m
        .transcribe_with(&pcm, &o, |s| {
            seen.push(s.clone());
            ControlFlow::Continue(())
        })
        .unwrap();
    let want = golden();
    let got: Vec<_> = t
        .segments
        .iter()
        .map(|s| {
            (
                s.t0_ms,
                s.t1_ms,
                s.text.clone(),
                s.tokens.iter().map(|k| k.id).collect::<Vec<_>>(),
            )
        })
        .collect();
    assert_eq!(got, want);
    assert_eq!(seen, t.segments);
    assert_eq!(t.language, "en");
    assert_eq!(
        t.text,
        want.iter().map(|s| s.2.as_str()).collect::<String>()
    );
    let pieces: String = t.segments[0]
        .tokens
        .iter()
        .map(|k| m.token_text(k.id).unwrap())
        .collect();
    assert_eq!(pieces, t.segments[0].text);
    assert!(t
        .segments
        .iter()
        .flat_map(|s| &s.tokens)
        .all(|k| k.p > 0.0 && k.p <= 1.0));

    // Break after the first segment: the result holds it alone.
    let t = m
        .transcribe_with(&pcm, &o, |_| ControlFlow::Break(()))
        .unwrap();
    assert_eq!(t.segments.len(), 1);
}

#[test]
fn errors_name_the_problem() {
    let m = model();
    let pcm = jfk();
    let e = m
        .transcribe(
            &pcm[..16000],
            &TranscribeOptions {
                language: Some("xx".into()),
                ..Default::default()
            },
        )
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidArgument);
    assert!(e.message().contains("language 'xx'"), "{e}");
    let e = m
        .transcribe(
            &pcm[..16000],
            &TranscribeOptions {
                translate: true,
                ..Default::default()
            },
        )
        .unwrap_err();
    assert!(e.message().contains("English-only"), "{e}");
    let e = m
        .transcribe(&[], &TranscribeOptions::default())
        .unwrap_err();
    assert!(e.message().contains("pcm"), "{e}");
    let e = decode_wav(b"not a wav file at all").unwrap_err();
    assert!(e.message().contains("not a WAV file"), "{e}");
    let e = SpeechModel::load("/nonexistent/ggml-tiny.en.bin").unwrap_err();
    assert_eq!(e.code(), ErrorCode::Io);
    // A panic in the callback stops decoding and reaches the caller (never unwinding into C).
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        m.transcribe_with(&pcm[..16000 * 3], &TranscribeOptions::default(), |_| {
            panic!("from the callback")
        })
    }));
    assert!(r.is_err());
}

/// The decoding options reach the library: a prompt, beam search and word timestamps give
/// whisper.cpp's results (tests/data/golden/whisper/tiny.en-jfk-decoding.json); a seed makes
/// sampling reproducible; a bad field is named.
#[test]
fn decoding_options_match_whisper_cpp() {
    let m = model();
    let pcm = jfk();
    let text =
        std::fs::read_to_string(root().join("tests/data/golden/whisper/tiny.en-jfk-decoding.json"))
            .unwrap();
    let g: Value = zerfoo::serde_json::from_str(&text).unwrap();
    let check = |name: &str, o: TranscribeOptions| {
        let t = m.transcribe(&pcm, &o).unwrap();
        let want = g[name]["segments"].as_array().unwrap();
        assert_eq!(t.segments.len(), want.len(), "{name}: {:?}", t.segments);
        for (s, w) in t.segments.iter().zip(want) {
            assert_eq!(s.t0_ms, w["t0"].as_i64().unwrap() * 10, "{name}");
            assert_eq!(s.t1_ms, w["t1"].as_i64().unwrap() * 10, "{name}");
            assert_eq!(s.text, w["text"].as_str().unwrap(), "{name}");
        }
        t
    };
    let base = TranscribeOptions {
        n_threads: 2,
        ..Default::default()
    };
    check(
        "greedy_prompt",
        TranscribeOptions {
            prompt: Some(g["prompt"].as_str().unwrap().to_string()),
            ..base.clone()
        },
    );
    check(
        "beam5",
        TranscribeOptions {
            beam_size: 5,
            ..base.clone()
        },
    );
    let t = check(
        "greedy_token_timestamps",
        TranscribeOptions {
            word_timestamps: true,
            ..base.clone()
        },
    );
    let want = g["greedy_token_timestamps"]["segments"].as_array().unwrap();
    for (s, w) in t.segments.iter().zip(want) {
        for (tok, d) in s.tokens.iter().zip(w["token_data"].as_array().unwrap()) {
            assert_eq!(tok.t0_ms, d[5].as_i64().unwrap() * 10, "{tok:?}");
            assert_eq!(tok.t1_ms, d[6].as_i64().unwrap() * 10, "{tok:?}");
        }
        let joined: String = s.words.iter().map(|w| w.text.as_str()).collect();
        assert_eq!(joined, s.text);
        assert!(s
            .words
            .iter()
            .all(|w| w.text.starts_with(' ') && w.t0_ms <= w.t1_ms));
    }
    let sampled = TranscribeOptions {
        temperature: 1.0,
        temperature_inc: Some(0.0),
        seed: 42,
        ..base.clone()
    };
    let a = m.transcribe(&pcm, &sampled).unwrap();
    let b = m.transcribe(&pcm, &sampled).unwrap();
    assert!(!a.text.is_empty());
    assert_eq!(a.text, b.text);
    assert_eq!(a.segments[0].temperature, 1.0);
    let e = m
        .transcribe(
            &pcm[..16000],
            &TranscribeOptions {
                beam_size: 9,
                ..base
            },
        )
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidArgument);
    assert!(e.to_string().contains("params->beam_size"), "{e}");
}

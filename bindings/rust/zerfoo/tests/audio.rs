//! Audio through the safe crate (issue #46) on SmolLM2-135M with tests/vision's synthesized
//! ultravox projector and the first 4 s of the sdist's test-2.mp3 (tests/data/audio/
//! test-2-4s.wav). Random projector weights make the text noise, so the checks are the rows, the
//! positions the clip takes, that the same greedy request answers the same twice, and the errors.
//! $ZERFOO_VISION_MODELS/audio is the folder tests/vision/make_audio_models.sh writes (test.sh
//! runs it); $ZERFOO_GEMMA3_MODEL with $ZERFOO_VISION_MODELS' Gemma 3 projector for the refusal
//! of audio by a vision projector.
mod common;

use std::path::PathBuf;
use std::sync::Arc;

use zerfoo::{
    decode_wav, encode_wav, ChatRequest, ErrorCode, GenerateOptions, Image, Message, Mmproj, Model,
    ModelOptions, TurnOptions, AUDIO_SAMPLE_RATE,
};

fn projector(dir_and_file: &[&str]) -> Option<PathBuf> {
    let Some(dir) = std::env::var_os("ZERFOO_VISION_MODELS") else {
        eprintln!("skipping: ZERFOO_VISION_MODELS is not set (tests/vision/make_audio_models.sh DIR/audio)");
        return None;
    };
    let p = dir_and_file
        .iter()
        .fold(PathBuf::from(dir), |p, part| p.join(part));
    assert!(p.exists(), "{} is missing", p.display());
    Some(p)
}

/// SmolLM2 (shared, fully loaded) and the ultravox projector.
fn smol_audio() -> Option<(&'static Model, Mmproj)> {
    let model = common::model()?;
    let path = projector(&["audio", "mmproj-ultravox-f16.gguf"])?;
    Some((model, Mmproj::load(model, path).expect("load ultravox")))
}

/// The test clip's WAV bytes and its 16 kHz samples.
fn clip() -> (Vec<u8>, Vec<f32>) {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../tests/data/audio/test-2-4s.wav");
    let wav = std::fs::read(&path).expect("read the test clip");
    let pcm = decode_wav(&wav).unwrap();
    (wav, pcm)
}

#[test]
fn mmproj_embeds_audio() {
    let Some((_, mm)) = smol_audio() else {
        return;
    };
    let info = mm.info().unwrap();
    assert_eq!(info.projector_type, "ultravox");
    assert!(info.audio && !info.image, "{info:?}");
    assert_eq!(info.sample_rate as u32, AUDIO_SAMPLE_RATE);
    let (_, pcm) = clip();
    let rows = mm.embed_audio(&pcm, 2).unwrap();
    // 4 s is one 30 s chunk: 375 rows of the model's width (ultravox as synthesized).
    assert_eq!((rows.n_tokens, rows.n_embd), (375, info.n_embd as usize));
    assert_eq!(rows.data.len(), rows.n_tokens * rows.n_embd);
    for t in 0..rows.n_tokens {
        let norm: f32 = rows.row(t).iter().map(|v| v * v).sum();
        assert!(norm.is_finite() && norm > 0.0, "row {t}: norm {norm}");
    }
    // Shared between threads; the thread count does not change the rows.
    std::thread::scope(|s| {
        let a = s.spawn(|| mm.embed_audio(&pcm, 1).unwrap());
        let b = s.spawn(|| mm.embed_audio(&pcm, 1).unwrap());
        assert_eq!(a.join().unwrap(), rows);
        assert_eq!(b.join().unwrap(), rows);
    });
    // encode_wav writes the samples exactly.
    assert_eq!(decode_wav(&encode_wav(&pcm)).unwrap(), pcm);
}

#[test]
fn audio_errors_are_named() {
    let Some((_, mm)) = smol_audio() else {
        return;
    };
    let (_, pcm) = clip();
    let mut nan = pcm.clone();
    nan[1234] = f32::NAN;
    let cases: Vec<(&[f32], i32, &str)> = vec![
        (&[], 1, "at least 160"),
        (&pcm[..159], 1, "at least 160"),
        (&nan, 1, "pcm[1234] is NaN"),
        (&pcm, -1, "n_threads"),
    ];
    for (samples, threads, phrase) in cases {
        let e = mm.embed_audio(samples, threads).unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidArgument, "{e}");
        assert!(e.message().contains(phrase), "{e}: expected {phrase:?}");
    }
    let e = mm
        .embed_image(
            Image::Rgb8 {
                data: &[0; 12],
                width: 2,
                height: 2,
            },
            1,
        )
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidArgument, "{e}");
    assert!(e.message().contains("encodes audio, not images"), "{e}");
    // Audio to Gemma 3's vision projector.
    let Some(gemma) = std::env::var_os("ZERFOO_GEMMA3_MODEL") else {
        eprintln!("skipping the vision projector's refusal: ZERFOO_GEMMA3_MODEL is not set");
        return;
    };
    let opts = ModelOptions {
        vocab_only: true,
        ..Default::default()
    };
    let gemma = Model::load(gemma, &opts).unwrap();
    let vision = Mmproj::load(&gemma, projector(&["mmproj-gemma3-f16.gguf"]).unwrap()).unwrap();
    let info = vision.info().unwrap();
    assert!(
        info.image && !info.audio && info.sample_rate == 0,
        "{info:?}"
    );
    let e = vision.embed_audio(&pcm, 1).unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidArgument, "{e}");
    assert!(e.message().contains("encodes images, not audio"), "{e}");
}

/// The raw-prompt route: eval_audio, then generate continues; the same twice from fresh
/// sessions; a refused clip appends nothing.
#[test]
fn eval_audio_then_generate() {
    let Some((model, mm)) = smol_audio() else {
        return;
    };
    let (_, pcm) = clip();
    let answer = || {
        let mut s = model.session(&common::one_thread()).unwrap();
        let logits = s.eval_audio(&mm, &pcm).unwrap();
        assert_eq!(logits.len(), model.info().unwrap().n_vocab as usize);
        assert!(
            s.n_past().unwrap() >= 375,
            "{} positions",
            s.n_past().unwrap()
        );
        let g = s
            .generate("Transcript:", &GenerateOptions::greedy(8))
            .unwrap();
        assert!(g.generated_tokens > 0);
        g.text
    };
    assert_eq!(answer(), answer());
    let mut s = model.session(&common::one_thread()).unwrap();
    let mut inf = pcm.clone();
    inf[7] = f32::INFINITY;
    let e = s.eval_audio(&mm, &inf).unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidArgument, "{e}");
    assert!(e.message().contains("pcm[7] is infinite"), "{e}");
    assert_eq!(
        s.eval_audio(&mm, &[]).unwrap_err().code(),
        ErrorCode::InvalidArgument
    );
    assert_eq!(s.n_past().unwrap(), 0);
}

/// A chat turn with an audio clip (TurnOptions::mmproj, Message::user_with_audio): the clip's
/// 375 positions are in the prompt, encode_wav's bytes of the same samples answer as the file
/// does, and without the projector (or with an image for it) the part is refused by name.
#[test]
fn chat_turn_with_audio() {
    let Some((model, mm)) = smol_audio() else {
        return;
    };
    let mm = Arc::new(mm);
    let (wav, pcm) = clip();
    let opts = TurnOptions {
        generate: GenerateOptions::greedy(6),
        mmproj: Some(mm.clone()),
        ..Default::default()
    };
    let turn = |m: Message, o: &TurnOptions| {
        model
            .session(&common::one_thread())
            .unwrap()
            .chat(&ChatRequest::new(vec![m]), o)
    };
    let a = turn(
        Message::user_with_audio("What do you hear?", &[&wav]),
        &opts,
    )
    .unwrap();
    let written = encode_wav(&pcm);
    let b = turn(
        Message::user_with_audio("What do you hear?", &[&written]),
        &opts,
    )
    .unwrap();
    assert_eq!(a.message, b.message);
    let t = turn(Message::user("What do you hear?"), &opts).unwrap();
    assert!(
        a.done.usage.prompt_tokens >= t.done.usage.prompt_tokens + 375,
        "{} prompt tokens with the clip, {} without",
        a.done.usage.prompt_tokens,
        t.done.usage.prompt_tokens
    );
    let no_mmproj = TurnOptions {
        generate: GenerateOptions::greedy(2),
        ..Default::default()
    };
    let e = turn(Message::user_with_audio("Hi", &[&wav]), &no_mmproj).unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidArgument);
    assert!(e.message().contains("messages[0].content[0]"), "{e}");
    let gif = b"GIF89a\x01\x00\x01\x00\x00\x00\x00;";
    let e = turn(Message::user_with_images("And this?", &[gif]), &opts).unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidArgument);
    assert!(e.message().contains("encodes audio, not images"), "{e}");
}

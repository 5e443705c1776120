//! Images through the safe crate on tests/vision's synthesized Gemma 3 projector bound to
//! Gemma 3 270M: the projector's facts, RGB pixels = a BMP file of the same pixels, the
//! projector outliving its model, errors named. $ZERFOO_VISION_MODELS is the folder
//! tests/vision/make_models.sh writes (test.sh sets it); $ZERFOO_GEMMA3_MODEL the model
//! (default: the fetch script's cache).
mod common;

use std::path::PathBuf;

use std::sync::Arc;

use zerfoo::{
    ChatRequest, ErrorCode, GenerateOptions, Image, Message, Mmproj, MmprojInfo, Model,
    ModelOptions, TurnOptions,
};

fn gemma3() -> Option<Model> {
    gemma3_with(true)
}

fn gemma3_with(vocab_only: bool) -> Option<Model> {
    let path = std::env::var_os("ZERFOO_GEMMA3_MODEL")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap())
                .join(".cache/zerfoo/models/gemma-3-270m-q4_k_m.gguf")
        });
    if !path.exists() {
        eprintln!("skipping: Gemma 3 270M missing (scripts/fetch_models.sh gemma3)");
        return None;
    }
    let opts = ModelOptions {
        vocab_only,
        ..Default::default()
    };
    Some(Model::load(&path, &opts).expect("load gemma3"))
}

fn mmproj_path() -> Option<PathBuf> {
    let Some(dir) = std::env::var_os("ZERFOO_VISION_MODELS") else {
        eprintln!("skipping: ZERFOO_VISION_MODELS is not set (tests/vision/make_models.sh DIR)");
        return None;
    };
    let p = PathBuf::from(dir).join("mmproj-gemma3-f16.gguf");
    assert!(p.exists(), "{} is missing", p.display());
    Some(p)
}

/// A w x h picture (gradients and a checker) as RGB bytes and as a 24-bit BMP file.
fn picture(w: u32, h: u32) -> (Vec<u8>, Vec<u8>) {
    let mut rgb = Vec::new();
    for y in 0..h {
        for x in 0..w {
            rgb.extend_from_slice(&[
                (x * 255 / w) as u8,
                (y * 255 / h) as u8,
                if ((x / 8) ^ (y / 8)) & 1 == 1 { 200 } else { 0 },
            ]);
        }
    }
    let row = (w * 3).div_ceil(4) * 4;
    let size = 54 + row * h;
    let mut bmp = Vec::new();
    bmp.extend_from_slice(b"BM");
    for v in [size, 0, 54, 40] {
        bmp.extend_from_slice(&v.to_le_bytes());
    }
    bmp.extend_from_slice(&(w as i32).to_le_bytes());
    bmp.extend_from_slice(&(h as i32).to_le_bytes());
    bmp.extend_from_slice(&1u16.to_le_bytes());
    bmp.extend_from_slice(&24u16.to_le_bytes());
    for v in [0u32, row * h, 2835, 2835, 0, 0] {
        bmp.extend_from_slice(&v.to_le_bytes());
    }
    for y in (0..h).rev() {
        for x in 0..w {
            let i = ((y * w + x) * 3) as usize;
            bmp.extend_from_slice(&[rgb[i + 2], rgb[i + 1], rgb[i]]);
        }
        bmp.resize(bmp.len() + (row - w * 3) as usize, 0);
    }
    (rgb, bmp)
}

#[test]
fn mmproj_embeds_images() {
    let (Some(model), Some(path)) = (gemma3(), mmproj_path()) else {
        return;
    };
    let p = Mmproj::load(&model, &path).unwrap();
    assert_eq!(
        p.info().unwrap(),
        MmprojInfo {
            projector_type: "gemma3".into(),
            image_size: 896,
            patch_size: 14,
            n_tokens: 256,
            n_embd: 640,
            n_embd_vision: 64,
            n_layer: 2,
            image: true,
            audio: false,
            sample_rate: 0,
        }
    );
    let (rgb, bmp) = picture(100, 60);
    let from_bmp = p.embed_image(Image::Encoded(&bmp), 2).unwrap();
    assert_eq!((from_bmp.n_tokens, from_bmp.n_embd), (256, 640));
    for t in 0..from_bmp.n_tokens {
        let norm: f32 = from_bmp.row(t).iter().map(|v| v * v).sum();
        assert!(norm.is_finite() && norm > 0.0, "token {t}: norm {norm}");
    }
    // The projector keeps its model: dropping the model first leaves it usable.
    drop(model);
    let from_rgb = p
        .embed_image(
            Image::Rgb8 {
                data: &rgb,
                width: 100,
                height: 60,
            },
            2,
        )
        .unwrap();
    assert_eq!(
        from_bmp, from_rgb,
        "RGB pixels and the BMP of the same pixels differ"
    );
    // Shared between threads (Send + Sync).
    std::thread::scope(|s| {
        let a = s.spawn(|| p.embed_image(Image::Encoded(&bmp), 1).unwrap());
        let b = s.spawn(|| p.embed_image(Image::Encoded(&bmp), 1).unwrap());
        assert_eq!(a.join().unwrap(), b.join().unwrap());
    });
}

#[test]
fn mmproj_errors_are_named() {
    let (Some(model), Some(path)) = (gemma3(), mmproj_path()) else {
        return;
    };
    let p = Mmproj::load(&model, &path).unwrap();
    let (rgb, bmp) = picture(16, 16);
    let mut webp = b"RIFF\x24\x00\x00\x00WEBPVP8 ".to_vec();
    webp.resize(64, 0);
    let cases: Vec<(Image, ErrorCode, &str)> = vec![
        (Image::Encoded(&webp), ErrorCode::InvalidArgument, "WebP"),
        (Image::Encoded(&bmp[..40]), ErrorCode::Format, "image:"),
        (
            Image::Encoded(&[]),
            ErrorCode::InvalidArgument,
            "image->data is NULL",
        ),
        (
            Image::Rgb8 {
                data: &rgb,
                width: 16,
                height: 17,
            },
            ErrorCode::InvalidArgument,
            "width * height * 3",
        ),
        (
            Image::Rgb8 {
                data: &rgb,
                width: 10000,
                height: 10000,
            },
            ErrorCode::InvalidArgument,
            "exceed the budget",
        ),
    ];
    for (image, code, phrase) in cases {
        let e = p.embed_image(image, 1).unwrap_err();
        assert_eq!(e.code(), code, "{e}");
        assert!(e.message().contains(phrase), "{e}: expected {phrase:?}");
    }
    let e = Mmproj::load(&model, "/nonexistent/mmproj.gguf").unwrap_err();
    assert_eq!(e.code(), ErrorCode::Io, "{e}");
    // A projector of another model: SmolLM2 is 576 wide and a llama.
    if let Some(smol_path) = std::env::var_os("ZERFOO_TEST_MODEL").map(PathBuf::from) {
        let opts = ModelOptions {
            vocab_only: true,
            ..Default::default()
        };
        let smol = Model::load(&smol_path, &opts).unwrap();
        let e = Mmproj::load(&smol, &path).unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidArgument, "{e}");
        assert!(e.message().contains("embedding width 576"), "{e}");
        assert!(e.message().contains("the model is 'llama'"), "{e}");
    }
}

/// A chat turn with an image (TurnOptions::mmproj, Message::user_with_images): the image's 256
/// positions are in the prompt, the same greedy turn answers the same twice, and without the
/// projector the part is refused by name.
#[test]
fn chat_turn_with_image() {
    let (Some(model), Some(path)) = (gemma3_with(false), mmproj_path()) else {
        return;
    };
    let mm = Arc::new(Mmproj::load(&model, &path).unwrap());
    let (_, bmp) = picture(64, 48);
    let request = ChatRequest::new(vec![Message::user_with_images("What is this?", &[&bmp])]);
    let opts = TurnOptions {
        generate: GenerateOptions::greedy(6),
        mmproj: Some(mm.clone()),
        ..Default::default()
    };
    let a = model
        .session(&common::one_thread())
        .unwrap()
        .chat(&request, &opts)
        .unwrap();
    let b = model
        .session(&common::one_thread())
        .unwrap()
        .chat(&request, &opts)
        .unwrap();
    assert_eq!(a.message, b.message);
    let text = ChatRequest::new(vec![Message::user("What is this?")]);
    let t = model
        .session(&common::one_thread())
        .unwrap()
        .chat(&text, &opts)
        .unwrap();
    assert!(
        a.done.usage.prompt_tokens >= t.done.usage.prompt_tokens + 256,
        "{} prompt tokens with the image, {} without",
        a.done.usage.prompt_tokens,
        t.done.usage.prompt_tokens
    );
    let no_mmproj = TurnOptions {
        generate: GenerateOptions::greedy(2),
        ..Default::default()
    };
    let e = model
        .session(&common::one_thread())
        .unwrap()
        .chat(&request, &no_mmproj)
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidArgument);
    assert!(e.message().contains("messages[0].content[0]"), "{e}");
}

/// The raw-prompt route: eval_image, then generate continues; eval_embeddings of the image's
/// rows; errors named.
#[test]
fn eval_image_and_embeddings() {
    let (Some(model), Some(path)) = (gemma3_with(false), mmproj_path()) else {
        return;
    };
    let mm = Mmproj::load(&model, &path).unwrap();
    let (_, bmp) = picture(64, 48);
    let mut s = model.session(&common::one_thread()).unwrap();
    let logits = s.eval_image(&mm, Image::Encoded(&bmp)).unwrap();
    assert_eq!(logits.len(), model.info().unwrap().n_vocab as usize);
    assert!(s.n_past().unwrap() >= 256);
    let g = s
        .generate("Describe:", &GenerateOptions::greedy(4))
        .unwrap();
    assert!(g.generated_tokens > 0);

    let rows = mm.embed_image(Image::Encoded(&bmp), 1).unwrap();
    let mut s2 = model.session(&common::one_thread()).unwrap();
    s2.eval_embeddings(&rows.data, rows.n_embd, true).unwrap();
    assert_eq!(s2.n_past().unwrap(), rows.n_tokens);
    let e = s2.eval_embeddings(&[0.0; 3], 3, false).unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidArgument);
    assert!(s2.eval_embeddings(&[0.0; 5], 3, false).is_err());
    let e = s2
        .eval_image(&mm, Image::Encoded(b"not an image"))
        .unwrap_err();
    assert!(e.message().contains("image"), "{e}");
}

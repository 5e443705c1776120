//! Images through the safe crate on tests/vision's synthesized Gemma 3 projector bound to
//! Gemma 3 270M: the projector's facts, RGB pixels = a BMP file of the same pixels, the
//! projector outliving its model, errors named. $ZERFOO_VISION_MODELS is the folder
//! tests/vision/make_models.sh writes (test.sh sets it); $ZERFOO_GEMMA3_MODEL the model
//! (default: the fetch script's cache).
use std::path::PathBuf;

use zerfoo::{ErrorCode, Image, Mmproj, MmprojInfo, Model, ModelOptions};

fn gemma3() -> Option<Model> {
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
        vocab_only: true,
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

//! LoRA adapters through the safe API on SmolLM2: load a random adapter
//! (scripts/synth_lora.py), apply it with a scale (the logits change), scale 0 and a cleared
//! set give the base logits bit for bit, a misshaped adapter fails with the loader's message.
mod common;

use std::path::PathBuf;
use std::process::Command;

use common::model;
use zerfoo::{ErrorCode, SessionOptions};

fn synth(name: &str, args: &[&str]) -> Option<PathBuf> {
    let model = common::model_path()?;
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../scripts/synth_lora.py");
    let out = std::env::temp_dir().join(format!(
        "zerfoo-rust-lora-{}-{name}.gguf",
        std::process::id()
    ));
    let ok = Command::new("python3")
        .arg(script)
        .arg(model)
        .arg(&out)
        .args(args)
        .output()
        .ok()?;
    if !ok.status.success() {
        eprintln!(
            "skipping: scripts/synth_lora.py failed: {}",
            String::from_utf8_lossy(&ok.stderr)
        );
        return None;
    }
    Some(out)
}

#[test]
fn load_apply_clear() {
    let Some(model) = model() else { return };
    let Some(path) = synth("a", &["--seed", "1"]) else {
        return;
    };
    let a = model.load_lora(&path).expect("load the adapter");
    let info = a.info().unwrap();
    assert_eq!((info.rank, info.alpha, info.n_weights), (8, 16.0, 210));
    let opts = SessionOptions {
        n_ctx: 256,
        n_threads: 1,
        ..Default::default()
    };
    let tokens = model.tokenize(common::PROMPT, true, true).unwrap();
    let mut s = model.session(&opts).unwrap();
    let base = s.eval(&tokens).unwrap();
    s.reset().unwrap();
    s.set_loras(&[(&a, 1.0)]).unwrap();
    let adapted = s.eval(&tokens).unwrap();
    assert_ne!(adapted, base, "the adapter at scale 1 changed nothing");
    s.reset().unwrap();
    s.set_loras(&[(&a, 0.0)]).unwrap();
    let zero = s.eval(&tokens).unwrap();
    assert!(
        zero.iter()
            .zip(&base)
            .all(|(x, y)| x.to_bits() == y.to_bits()),
        "scale 0 is not the base model"
    );
    s.reset().unwrap();
    s.set_loras(&[(&a, 1.0)]).unwrap();
    drop(a); // applied: the session keeps it
    let again = s.eval(&tokens).unwrap();
    assert!(again
        .iter()
        .zip(&adapted)
        .all(|(x, y)| x.to_bits() == y.to_bits()));
    s.reset().unwrap();
    s.set_loras(&[]).unwrap();
    let cleared = s.eval(&tokens).unwrap();
    assert!(
        cleared
            .iter()
            .zip(&base)
            .all(|(x, y)| x.to_bits() == y.to_bits()),
        "cleared is not the base model"
    );
    std::fs::remove_file(path).ok();

    let Some(bad) = synth("bad", &["--layers", "0", "--defect", "bad_shape"]) else {
        return;
    };
    let err = model.load_lora(&bad).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidArgument);
    assert!(err.message().contains("lora_b [9, "), "{}", err.message());
    std::fs::remove_file(bad).ok();
}

//! Fill-in-the-middle token ids in ModelInfo: none on SmolLM2 (its "<reponame>" is a repository
//! token), all six on scripts/fim_model.py's copy of it.
mod common;

use std::path::Path;
use std::process::Command;

use common::{model, model_path};
use zerfoo::{FimTokens, Model, ModelOptions};

#[test]
fn fim_tokens() {
    let Some(model) = model() else { return };
    let fim = model.info().unwrap().fim;
    assert_eq!(
        (fim.pre, fim.suf, fim.mid, fim.pad, fim.sep),
        (None, None, None, None, None)
    );
    assert_eq!(fim.rep, Some(4));
    assert!(!fim.has_infill());

    let src = model_path().unwrap();
    let out = std::env::temp_dir().join(format!("zerfoo-rust-fim-{}.gguf", std::process::id()));
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../scripts/fim_model.py");
    let status = Command::new("python3")
        .arg(&script)
        .arg(&src)
        .arg(&out)
        .stdout(std::process::Stdio::null())
        .status()
        .expect("python3");
    assert!(status.success(), "{} failed", script.display());
    let opts = ModelOptions {
        vocab_only: true,
        ..Default::default()
    };
    let fim_model = Model::load(&out, &opts).unwrap();
    let fim: FimTokens = fim_model.info().unwrap().fim;
    drop(fim_model);
    let _ = std::fs::remove_file(&out);
    assert_eq!(
        (fim.pre, fim.suf, fim.mid, fim.pad, fim.rep, fim.sep),
        (Some(11), Some(12), Some(13), Some(14), Some(4), Some(5))
    );
    assert!(fim.has_infill());
}

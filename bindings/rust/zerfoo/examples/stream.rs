//! Streams a greedy completion with the pull-style iterator, printing pieces as they come.
//!
//! ```sh
//! cargo run --example stream -- model.gguf "The capital of France is"
//! ```
use std::io::Write;

use zerfoo::{GenerateOptions, Model, ModelOptions, SessionOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args.next().ok_or("usage: stream MODEL.gguf [PROMPT]")?;
    let prompt = args
        .next()
        .unwrap_or_else(|| "The capital of France is".to_string());

    let model = Model::load(&path, &ModelOptions::default())?;
    let mut session = model.session(&SessionOptions::default())?;
    let mut pieces = session.stream(&prompt, &GenerateOptions::greedy(64))?;
    print!("{prompt}");
    for piece in pieces.by_ref() {
        print!("{}", piece?);
        std::io::stdout().flush()?;
    }
    let g = pieces.generation();
    eprintln!(
        "\n[{:?}: {} tokens, {:.1} tok/s]",
        g.stop_reason,
        g.generated_tokens,
        g.tokens_per_second()
    );
    Ok(())
}

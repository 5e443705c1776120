//! Measures generation throughput through the Rust binding: the same greedy generation as
//! `zerfoo generate -p PROMPT -n N --temp 0 --ignore-eos -t T`, timed in Rust around the
//! iterator (so binding overhead counts), next to the library's own numbers.
//!
//! ```sh
//! cargo run --release --example tps -- model.gguf [N] [THREADS] [REPS] [PROMPT]
//! ```
use std::time::Instant;

use zerfoo::{GenerateOptions, Model, ModelOptions, SessionOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let path = args
        .first()
        .ok_or("usage: tps MODEL.gguf [N] [THREADS] [REPS] [PROMPT]")?;
    let n: u32 = args.get(1).map_or(Ok(128), |s| s.parse())?;
    let threads: i32 = args.get(2).map_or(Ok(0), |s| s.parse())?;
    let reps: u32 = args.get(3).map_or(Ok(3), |s| s.parse())?;
    let prompt = args
        .get(4)
        .cloned()
        .unwrap_or_else(|| "The capital of France is".into());

    let model = Model::load(path, &ModelOptions::default())?;
    let options = GenerateOptions {
        ignore_eos: true,
        ..GenerateOptions::greedy(n)
    };
    for _ in 0..reps {
        let so = SessionOptions {
            n_ctx: n as i32 + 64,
            n_threads: threads,
            ..Default::default()
        };
        let mut session = model.session(&so)?;
        let mut pieces = session.stream(&prompt, &options)?;
        let mut first = None;
        for piece in pieces.by_ref() {
            piece?;
            first.get_or_insert_with(Instant::now);
        }
        let wall = first.map_or(0.0, |t| t.elapsed().as_secs_f64());
        let g = pieces.generation();
        // Pieces after the first arrive one decode step apart: (generated - 1) steps in `wall`.
        println!(
            "rust: {} tokens, decode {:.2} tok/s (Rust wall clock), library reports {:.2} tok/s",
            g.generated_tokens,
            (g.generated_tokens.saturating_sub(1)) as f64 / wall,
            g.tokens_per_second()
        );
    }
    Ok(())
}

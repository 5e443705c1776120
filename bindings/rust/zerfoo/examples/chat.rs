//! An interactive chat: each line you type becomes a user turn, rendered with the model's own
//! chat template; the reply streams through a callback. Ctrl-D ends.
//!
//! ```sh
//! cargo run --release --example chat -- model.gguf
//! ```
use std::io::{BufRead, Write};
use std::ops::ControlFlow;

use zerfoo::{ChatMessage, GenerateOptions, Model, ModelOptions, SessionOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args().nth(1).ok_or("usage: chat MODEL.gguf")?;
    let model = Model::load(&path, &ModelOptions::default())?;
    let mut session = model.session(&SessionOptions::default())?;
    let options = GenerateOptions {
        max_tokens: Some(512),
        ..Default::default()
    };
    let mut history = vec![ChatMessage::system("You are a helpful assistant.")];

    let stdin = std::io::stdin();
    loop {
        print!("> ");
        std::io::stdout().flush()?;
        let mut line = String::new();
        if stdin.lock().read_line(&mut line)? == 0 {
            break;
        }
        history.push(ChatMessage::user(line.trim_end()));
        // The whole conversation is rendered and evaluated each turn (simple and always
        // correct for any template); a reset keeps the context from filling up.
        let prompt = model.apply_chat_template(&history, true)?;
        session.reset()?;
        let reply = session.generate_with(&prompt, &options, |piece| {
            print!("{piece}");
            let _ = std::io::stdout().flush();
            ControlFlow::Continue(())
        })?;
        println!();
        history.push(ChatMessage::assistant(reply.text.trim()));
    }
    Ok(())
}

//! An interactive chat: each line you type becomes a user message, and the assistant's turn
//! (`Session::chat_turn`, the model's own chat template) streams its events. Ctrl-D ends.
//!
//! ```sh
//! cargo run --release --example chat -- model.gguf
//! ```
use std::io::{BufRead, Write};

use zerfoo::{
    ChatRequest, GenerateOptions, Message, Model, ModelOptions, SessionOptions, TurnEvent,
    TurnOptions,
};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args().nth(1).ok_or("usage: chat MODEL.gguf")?;
    let model = Model::load(&path, &ModelOptions::default())?;
    let mut session = model.session(&SessionOptions::default())?;
    let options = TurnOptions {
        generate: GenerateOptions {
            max_tokens: Some(512),
            ..Default::default()
        },
        ..Default::default()
    };
    let mut request = ChatRequest::new(vec![Message::system("You are a helpful assistant.")]);

    let stdin = std::io::stdin();
    loop {
        print!("> ");
        std::io::stdout().flush()?;
        let mut line = String::new();
        if stdin.lock().read_line(&mut line)? == 0 {
            break;
        }
        request.messages.push(Message::user(line.trim_end()));
        // The whole conversation is sent each turn; the session keeps the part it already
        // evaluated (the turn's usage counts it as cached), so only the new text is evaluated.
        let mut turn = session.chat_turn(&request, &options)?;
        for event in turn.by_ref() {
            match event? {
                TurnEvent::Content(text) | TurnEvent::Reasoning(text) => print!("{text}"),
                TurnEvent::Done(done) => eprint!(
                    "\n[{:?}: {} prompt tokens, {} cached, {} generated]",
                    done.finish_reason,
                    done.usage.prompt_tokens,
                    done.usage.cached_tokens,
                    done.usage.completion_tokens
                ),
                _ => {}
            }
            std::io::stdout().flush()?;
        }
        println!();
        request.messages.push(turn.message()?.into());
    }
    Ok(())
}

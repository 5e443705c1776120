//! Shared helpers: the test model ($ZERFOO_TEST_MODEL, else the fetch script's cache).
#![allow(dead_code)]
use std::path::PathBuf;
use std::sync::OnceLock;

use zerfoo::serde_json::json;
use zerfoo::{Model, ModelOptions, SessionOptions, Tool};

pub const PROMPT: &str = "The capital of France is";

/// The SmolLM2 test model; None (test skipped, with a note) when absent and not required.
pub fn model_path() -> Option<PathBuf> {
    let path = match std::env::var_os("ZERFOO_TEST_MODEL") {
        Some(p) => PathBuf::from(p),
        None => {
            let home = std::env::var_os("HOME")?;
            PathBuf::from(home).join(".cache/zerfoo/models/smollm2-135m-instruct-q4_1.gguf")
        }
    };
    if path.exists() {
        Some(path)
    } else if std::env::var_os("ZERFOO_TEST_MODEL").is_some() {
        panic!("ZERFOO_TEST_MODEL={} does not exist", path.display());
    } else {
        eprintln!(
            "skipping: no test model (set ZERFOO_TEST_MODEL; scripts/fetch_models.sh smollm2)"
        );
        None
    }
}

/// One model shared by the tests of a binary (they run on parallel threads).
pub fn model() -> Option<&'static Model> {
    static MODEL: OnceLock<Option<Model>> = OnceLock::new();
    MODEL
        .get_or_init(|| {
            let opts = ModelOptions {
                n_threads: 1,
                ..Default::default()
            };
            model_path().map(|p| Model::load(p, &opts).expect("load the test model"))
        })
        .as_ref()
}

/// The two tools the chat-turn tests offer: get_weather(city) and get_time(timezone).
pub fn tools() -> Vec<Tool> {
    vec![
        Tool::new(
            "get_weather",
            "Get the current weather in a city",
            json!({"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}),
        ),
        Tool::new(
            "get_time",
            "Get the current time in a time zone",
            json!({"type": "object", "properties": {"timezone": {"type": "string"}},
                   "required": ["timezone"]}),
        ),
    ]
}

/// Decodes the "text" member of the CLI's --json output (a JSON string).
pub fn json_text(json: &str) -> String {
    let start = json.find("\"text\"").expect("a text member") + 6;
    let rest = json[start..]
        .trim_start()
        .strip_prefix(':')
        .unwrap()
        .trim_start();
    let mut chars = rest.strip_prefix('"').expect("a string").chars();
    let mut out = String::new();
    let mut pending_high: Option<u32> = None;
    while let Some(c) = chars.next() {
        match c {
            '"' => break,
            '\\' => match chars.next().unwrap() {
                'n' => out.push('\n'),
                't' => out.push('\t'),
                'r' => out.push('\r'),
                'b' => out.push('\u{8}'),
                'f' => out.push('\u{c}'),
                'u' => {
                    let hex: String = chars.by_ref().take(4).collect();
                    let v = u32::from_str_radix(&hex, 16).unwrap();
                    if (0xD800..0xDC00).contains(&v) {
                        pending_high = Some(v);
                    } else if (0xDC00..0xE000).contains(&v) {
                        let hi = pending_high.take().expect("a high surrogate first");
                        out.push(
                            char::from_u32(0x10000 + ((hi - 0xD800) << 10) + (v - 0xDC00)).unwrap(),
                        );
                    } else {
                        out.push(char::from_u32(v).unwrap());
                    }
                }
                other => out.push(other),
            },
            c => out.push(c),
        }
    }
    out
}

/// A session of 1024 positions on one thread (the multimodal tests' prompts).
pub fn one_thread() -> SessionOptions {
    SessionOptions {
        n_ctx: 1024,
        n_threads: 1,
        ..Default::default()
    }
}

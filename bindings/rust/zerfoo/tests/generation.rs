//! Generation through the safe API on the real SmolLM2 model: parity with the C CLI, the
//! three generation styles agree, cancel, early drop, panics, threads.
mod common;

use std::ops::ControlFlow;
use std::panic::{self, AssertUnwindSafe};
use std::time::{Duration, Instant};

use common::{model, PROMPT};
use zerfoo::{
    ChatMessage, Constraint, ErrorCode, GenerateOptions, Model, ModelOptions, SessionOptions,
    StopReason,
};

fn opts1() -> SessionOptions {
    SessionOptions {
        n_ctx: 512,
        n_threads: 1,
        ..Default::default()
    }
}

#[test]
fn greedy_output_equals_the_c_cli() {
    let Some(model) = model() else { return };
    let Ok(cli) = std::env::var("ZERFOO_CLI") else {
        eprintln!("skipping: ZERFOO_CLI is not set");
        return;
    };
    let path = common::model_path().unwrap();
    let out = std::process::Command::new(cli)
        .args(["generate", "-m"])
        .arg(&path)
        .args(["-p", PROMPT, "-n", "32", "--temp", "0", "-t", "1", "--json"])
        .output()
        .expect("run the CLI");
    assert!(
        out.status.success(),
        "CLI failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let expected = common::json_text(&String::from_utf8(out.stdout).unwrap());
    let mut session = model.session(&opts1()).unwrap();
    let g = session
        .generate(PROMPT, &GenerateOptions::greedy(32))
        .unwrap();
    assert!(!g.text.is_empty());
    assert_eq!(g.text, expected);
    assert_eq!(g.generated_tokens, 32.min(g.generated_tokens));
    assert!(g.prompt_tokens > 0);
}

#[test]
fn callback_iterator_and_whole_text_agree() {
    let Some(model) = model() else { return };
    let options = GenerateOptions::greedy(40);
    let whole = model
        .session(&opts1())
        .unwrap()
        .generate(PROMPT, &options)
        .unwrap();

    let mut pushed = Vec::new();
    let via_cb = model
        .session(&opts1())
        .unwrap()
        .generate_with(PROMPT, &options, |p| {
            pushed.push(p.to_string());
            ControlFlow::Continue(())
        })
        .unwrap();

    let mut session = model.session(&opts1()).unwrap();
    let mut it = session.stream(PROMPT, &options).unwrap();
    let pulled: Vec<String> = it.by_ref().map(|p| p.unwrap()).collect();
    let via_iter = it.generation();
    drop(it);

    assert!(!pushed.is_empty());
    assert_eq!(
        pushed.concat(),
        whole.text,
        "streamed pieces concatenate to the full text"
    );
    assert_eq!(pulled, pushed, "iterator and callback give the same pieces");
    assert_eq!(via_cb.text, whole.text);
    assert_eq!(via_iter.text, whole.text);
    for g in [&via_cb, &via_iter] {
        assert_eq!(g.stop_reason, whole.stop_reason);
        assert_eq!(g.generated_tokens, whole.generated_tokens);
        assert_eq!(g.prompt_tokens, whole.prompt_tokens);
    }
    // The session continues the conversation like the push API does.
    let next_iter: String = session
        .stream(" Paris is", &options)
        .unwrap()
        .map(|p| p.unwrap())
        .collect();
    let mut s2 = model.session(&opts1()).unwrap();
    s2.generate(PROMPT, &options).unwrap();
    assert_eq!(next_iter, s2.generate(" Paris is", &options).unwrap().text);
}

#[test]
fn stop_strings_and_max_tokens() {
    let Some(model) = model() else { return };
    let mut session = model.session(&opts1()).unwrap();
    let g = session
        .generate(PROMPT, &GenerateOptions::greedy(3))
        .unwrap();
    assert_eq!(g.stop_reason, StopReason::MaxTokens);
    assert_eq!(g.generated_tokens, 3);
    session.reset().unwrap();
    assert_eq!(session.n_past().unwrap(), 0);
    let full = session
        .generate(PROMPT, &GenerateOptions::greedy(40))
        .unwrap()
        .text;
    let cut = full.char_indices().nth(10).map(|(i, _)| i).unwrap();
    let stop = full[cut..].chars().take(3).collect::<String>();
    session.reset().unwrap();
    let o = GenerateOptions {
        stop: vec![stop.clone()],
        ..GenerateOptions::greedy(40)
    };
    let g = session.generate(PROMPT, &o).unwrap();
    assert_eq!(g.stop_reason, StopReason::StopString);
    assert!(
        full.starts_with(&g.text) && !g.text.contains(&stop),
        "{:?} vs {:?}",
        g.text,
        full
    );
}

#[test]
fn cancel_from_another_thread_stops_within_a_token() {
    let Some(model) = model() else { return };
    let mut session = model
        .session(&SessionOptions {
            n_ctx: 2048,
            n_threads: 1,
            ..Default::default()
        })
        .unwrap();
    let cancel = session.cancel_handle();
    let options = GenerateOptions {
        max_tokens: None,
        ignore_eos: true,
        ..GenerateOptions::greedy(0)
    };
    // Callback style: cancel after the 3rd piece from another thread, wait until it is sent.
    let mut n = 0;
    let g = session
        .generate_with(PROMPT, &options, |_| {
            n += 1;
            if n == 3 {
                let c = cancel.clone();
                std::thread::spawn(move || c.cancel()).join().unwrap();
            }
            ControlFlow::Continue(())
        })
        .unwrap();
    assert_eq!(g.stop_reason, StopReason::Cancelled);
    assert!(
        g.generated_tokens <= 4,
        "stopped within one token: {}",
        g.generated_tokens
    );
    assert!(n <= 4);

    // Iterator style: the same.
    let mut it = session.stream(" Again", &options).unwrap();
    for _ in 0..3 {
        it.next().unwrap().unwrap();
    }
    std::thread::spawn(move || cancel.cancel()).join().unwrap();
    let rest: Vec<_> = it.by_ref().collect();
    assert!(
        rest.len() <= 1,
        "at most a held-back tail after cancel: {rest:?}"
    );
    assert_eq!(it.generation().stop_reason, StopReason::Cancelled);
    assert!(it.generation().generated_tokens <= 4);
    drop(it);
    // Consumed: the next generation runs normally.
    assert_eq!(
        session
            .generate(" More", &GenerateOptions::greedy(2))
            .unwrap()
            .generated_tokens,
        2
    );
}

#[test]
fn cancel_while_running_unbounded() {
    let Some(model) = model() else { return };
    let mut session = model
        .session(&SessionOptions {
            n_ctx: 4096,
            n_threads: 1,
            ..Default::default()
        })
        .unwrap();
    let cancel = session.cancel_handle();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        let at = Instant::now();
        cancel.cancel();
        at
    });
    let options = GenerateOptions {
        max_tokens: None,
        ignore_eos: true,
        ..GenerateOptions::greedy(0)
    };
    let g = session.generate(PROMPT, &options).unwrap();
    let returned = Instant::now();
    let sent = t.join().unwrap();
    assert_eq!(g.stop_reason, StopReason::Cancelled);
    assert!(g.generated_tokens < 4000);
    assert!(
        returned.duration_since(sent) < Duration::from_millis(500),
        "stopped promptly"
    );
}

#[test]
fn dropping_the_iterator_mid_stream_keeps_the_session_consistent() {
    let Some(model) = model() else { return };
    let options = GenerateOptions::greedy(40);
    // Reference: a callback that stops after 5 pieces, then a second turn.
    let mut a = model.session(&opts1()).unwrap();
    let mut n = 0;
    let first = a
        .generate_with(PROMPT, &options, |_| {
            n += 1;
            if n == 5 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })
        .unwrap();
    assert_eq!(first.stop_reason, StopReason::Callback);
    let a_past = a.n_past().unwrap();
    let second = a.generate(" Then", &options).unwrap().text;

    let mut b = model.session(&opts1()).unwrap();
    let mut it = b.stream(PROMPT, &options).unwrap();
    let five: String = it.by_ref().take(5).map(|p| p.unwrap()).collect();
    assert_eq!(five, first.text);
    drop(it); // stops and frees the generation mid-stream
    assert_eq!(b.n_past().unwrap(), a_past);
    assert_eq!(b.generate(" Then", &options).unwrap().text, second);
}

#[test]
fn a_panicking_callback_is_resumed_and_the_session_stays_usable() {
    let Some(model) = model() else { return };
    let mut session = model.session(&opts1()).unwrap();
    let mut calls = 0;
    let caught = panic::catch_unwind(AssertUnwindSafe(|| {
        let _ = session.generate_with(PROMPT, &GenerateOptions::greedy(20), |_| {
            calls += 1;
            if calls == 2 {
                panic!("boom in the callback");
            }
            ControlFlow::Continue(())
        });
    }));
    let payload = caught.expect_err("the panic reaches the caller");
    assert_eq!(
        payload.downcast_ref::<&str>(),
        Some(&"boom in the callback")
    );
    assert_eq!(calls, 2, "generation stopped at the panic");
    // Usable: it continues, and after a reset it gives the reference output again.
    assert!(
        session
            .generate(" Next", &GenerateOptions::greedy(4))
            .unwrap()
            .generated_tokens
            == 4
    );
    session.reset().unwrap();
    let again = session
        .generate(PROMPT, &GenerateOptions::greedy(8))
        .unwrap()
        .text;
    let fresh = model
        .session(&opts1())
        .unwrap()
        .generate(PROMPT, &GenerateOptions::greedy(8))
        .unwrap()
        .text;
    assert_eq!(again, fresh);
}

#[test]
fn many_threads_share_one_model() {
    let Some(model) = model() else { return };
    let reference = model
        .session(&opts1())
        .unwrap()
        .generate(PROMPT, &GenerateOptions::greedy(12))
        .unwrap()
        .text;
    let model: &Model = model;
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..4)
            .map(|_| {
                scope.spawn(|| {
                    let mut s = model.session(&opts1()).unwrap();
                    s.generate(PROMPT, &GenerateOptions::greedy(12))
                        .unwrap()
                        .text
                })
            })
            .collect();
        for h in handles {
            assert_eq!(h.join().unwrap(), reference);
        }
    });
    // An owned session moves into a 'static thread with a clone of the model.
    let owned = model.session_owned(&opts1()).unwrap();
    let text = std::thread::spawn(move || {
        let mut s = owned;
        s.generate(PROMPT, &GenerateOptions::greedy(12))
            .unwrap()
            .text
    })
    .join()
    .unwrap();
    assert_eq!(text, reference);
}

#[test]
fn seeded_sampling_is_reproducible() {
    let Some(model) = model() else { return };
    let o = GenerateOptions {
        seed: Some(42),
        max_tokens: Some(16),
        ..Default::default()
    };
    let a = model
        .session(&opts1())
        .unwrap()
        .generate(PROMPT, &o)
        .unwrap()
        .text;
    let b = model
        .session(&opts1())
        .unwrap()
        .generate(PROMPT, &o)
        .unwrap()
        .text;
    assert_eq!(a, b);
}

/// Eight different prompts (different lengths: sequences join and leave the batch at
/// different steps).
const BATCH_PROMPTS: [&str; 8] = [
    "The capital of France is",
    "Once upon a time",
    "def fibonacci(n):",
    "The three primary colors are",
    "In 1969, the first",
    "Water boils at",
    "A haiku about the sea:",
    "The quick brown fox",
];

#[test]
fn batched_decode_gives_each_thread_its_output_alone() {
    let Some(plain) = model() else { return };
    let options = GenerateOptions::greedy(16);
    let want: Vec<String> = BATCH_PROMPTS
        .iter()
        .map(|p| {
            let g = plain
                .session(&opts1())
                .unwrap()
                .generate(p, &options)
                .unwrap();
            assert!(g.generated_tokens > 0, "nothing generated for {p:?}");
            g.text
        })
        .collect();
    let batched = Model::load(
        common::model_path().unwrap(),
        &ModelOptions {
            max_batch: 8,
            ..Default::default()
        },
    )
    .unwrap();
    let barrier = std::sync::Barrier::new(BATCH_PROMPTS.len());
    let got: Vec<String> = std::thread::scope(|scope| {
        let handles: Vec<_> = BATCH_PROMPTS
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let (batched, barrier, options) = (&batched, &barrier, &options);
                scope.spawn(move || {
                    let mut s = batched.session(&opts1()).unwrap();
                    barrier.wait(); // start together, so that the decode steps overlap
                    if i % 2 == 0 {
                        // Each caller's callback gets its own pieces.
                        let mut pieces = String::new();
                        let g = s
                            .generate_with(p, options, |piece| {
                                pieces.push_str(piece);
                                ControlFlow::Continue(())
                            })
                            .unwrap();
                        assert_eq!(pieces, g.text);
                        pieces
                    } else {
                        s.generate(p, options).unwrap().text
                    }
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (i, p) in BATCH_PROMPTS.iter().enumerate() {
        assert_eq!(got[i], want[i], "prompt {i} {p:?}: batched vs alone");
    }
}

#[test]
fn logprobs_greedy_callback_and_iterator_agree() {
    let Some(model) = model() else { return };
    let options = GenerateOptions {
        logprobs: 5,
        ..GenerateOptions::greedy(24)
    };
    let g = model
        .session(&opts1())
        .unwrap()
        .generate(PROMPT, &options)
        .unwrap();
    assert!(g.generated_tokens > 0);
    assert_eq!(g.logprobs.len(), g.generated_tokens);
    for lp in &g.logprobs {
        assert_eq!(lp.top.len(), 5);
        assert_eq!(lp.chosen, lp.top[0], "greedy picks the top alternative");
        assert!(lp.chosen.logprob <= 0.0);
        assert!(lp.top.windows(2).all(|w| w[0].logprob >= w[1].logprob));
        let mass: f64 = lp.top.iter().map(|t| f64::from(t.logprob).exp()).sum();
        assert!(mass <= 1.0 + 1e-5, "top-5 mass {mass}");
    }

    // The iterator reports the same values piece by piece, each piece's token last.
    let mut session = model.session(&opts1()).unwrap();
    let mut pieces = session.stream(PROMPT, &options).unwrap();
    let mut per_piece = Vec::new();
    while let Some(piece) = pieces.next() {
        piece.unwrap();
        let lp = pieces.piece_logprobs();
        assert!(!lp.is_empty());
        per_piece.extend_from_slice(lp);
    }
    assert_eq!(per_piece, g.logprobs);
    assert_eq!(pieces.generation().logprobs, g.logprobs);
    drop(pieces);

    // Off by default; out of range is an invalid argument naming the field.
    let off = session
        .generate(PROMPT, &GenerateOptions::greedy(4))
        .unwrap();
    assert!(off.logprobs.is_empty());
    let bad = GenerateOptions {
        logprobs: zerfoo::MAX_LOGPROBS + 1,
        ..GenerateOptions::greedy(4)
    };
    let e = session.generate(PROMPT, &bad).unwrap_err();
    assert_eq!(e.code(), zerfoo::ErrorCode::InvalidArgument);
    assert!(e.to_string().contains("n_logprobs"), "{e}");
}

/// A greedy chat turn under `constraint`; a complete constrained text ends with Eos.
fn constrained(model: &Model, question: &str, constraint: Constraint) -> String {
    let prompt = model
        .apply_chat_template(&[ChatMessage::user(question)], true)
        .unwrap();
    let mut session = model
        .session(&SessionOptions {
            n_ctx: 1024,
            n_threads: 1,
            ..Default::default()
        })
        .unwrap();
    let g = session
        .generate(
            &prompt,
            &GenerateOptions::greedy(200).with_constraint(constraint),
        )
        .unwrap();
    assert_eq!(g.stop_reason, StopReason::Eos, "{:?}", g.text);
    g.text
}

#[test]
fn constraints_shape_the_output() {
    let Some(model) = model() else { return };
    match model.check_constraint(&Constraint::Regex("[0-9]+".into())) {
        Err(e) if e.code() == ErrorCode::Unsupported => {
            eprintln!("skipping: libzerfoo was built without constraints: {e}");
            return;
        }
        r => r.unwrap(),
    }

    // A JSON schema: with no strings in the object, the text without whitespace is exactly
    // {"age":N}.
    let schema = r#"{"type": "object", "properties": {"age": {"type": "integer", "minimum": 0, "maximum": 150}},
                     "required": ["age"], "additionalProperties": false}"#;
    model
        .check_constraint(&Constraint::JsonSchema(schema.into()))
        .unwrap();
    let text = constrained(
        model,
        "Alice is 30 years old. Give her age as JSON.",
        Constraint::JsonSchema(schema.into()),
    );
    let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    let age = compact
        .strip_prefix(r#"{"age":"#)
        .and_then(|r| r.strip_suffix('}'))
        .unwrap_or_else(|| panic!("not the schema's object: {text:?}"));
    let age: u32 = age.parse().unwrap_or_else(|_| panic!("age in {text:?}"));
    assert!(age <= 150, "{text:?}");

    // A regex matches the whole output: (yes|no), because [a-z ,]{1,60}\.
    let text = constrained(
        model,
        "Is the sky blue? Answer yes or no and explain.",
        Constraint::Regex(r"(yes|no), because [a-z ,]{1,60}\.".into()),
    );
    let reason = text
        .strip_prefix("yes, because ")
        .or_else(|| text.strip_prefix("no, because "))
        .and_then(|r| r.strip_suffix('.'))
        .unwrap_or_else(|| panic!("regex output {text:?}"));
    assert!(
        (1..=60).contains(&reason.len())
            && reason
                .chars()
                .all(|c| c.is_ascii_lowercase() || c == ' ' || c == ','),
        "regex output {text:?}"
    );

    // A choice gives one of the strings, verbatim.
    let choices = vec!["red".to_string(), "green".into(), "blue \"dark\"".into()];
    let text = constrained(
        model,
        "What colour is grass?",
        Constraint::Choice(choices.clone()),
    );
    assert!(choices.contains(&text), "{text:?}");

    // A Lark grammar.
    let text = constrained(
        model,
        "What is 6 times 7?",
        Constraint::Lark("start: \"The answer is \" NUMBER \".\"\nNUMBER: /[0-9]{1,4}/\n".into()),
    );
    let n = text
        .strip_prefix("The answer is ")
        .and_then(|r| r.strip_suffix('.'))
        .unwrap_or_else(|| panic!("Lark output {text:?}"));
    assert!(
        (1..=4).contains(&n.len()) && n.bytes().all(|b| b.is_ascii_digit()),
        "{text:?}"
    );

    // The pull iterator is constrained the same way.
    let mut session = model.session(&opts1()).unwrap();
    let options = GenerateOptions::greedy(16).with_constraint(Constraint::Regex("[0-9]{2}".into()));
    let mut pieces = session.stream("Pick a number:", &options).unwrap();
    let mut pulled = String::new();
    for piece in pieces.by_ref() {
        pulled.push_str(&piece.unwrap());
    }
    assert!(
        pulled.len() == 2 && pulled.bytes().all(|b| b.is_ascii_digit()),
        "{pulled:?}"
    );

    // Invalid constraints: InvalidArgument with the compiler's message, nothing evaluated; the
    // same from check_constraint.
    let cases = [
        (
            Constraint::Regex("([a-z".into()),
            "invalid regular expression",
        ),
        (
            Constraint::JsonSchema(r#"{"type": 12}"#.into()),
            "invalid JSON schema",
        ),
        (Constraint::Choice(Vec::new()), "non-empty"),
        (
            Constraint::Lark("start: missing_rule".into()),
            "Lark grammar",
        ),
    ];
    for (c, message) in cases {
        let mut session = model.session(&opts1()).unwrap();
        let e = session
            .generate(
                PROMPT,
                &GenerateOptions::greedy(8).with_constraint(c.clone()),
            )
            .unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidArgument, "{c:?}: {e}");
        assert!(e.to_string().contains(message), "{c:?}: {e}");
        assert_eq!(session.n_past().unwrap(), 0, "{c:?}: nothing evaluated");
        let e = model.check_constraint(&c).unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidArgument, "{c:?}: {e}");
        assert!(e.to_string().contains(message), "{c:?}: {e}");
    }
    let e = model
        .check_constraint(&Constraint::Regex("a\0b".into()))
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidArgument);

    // The constraint covers one call: the next one on the session is free again.
    let mut session = model.session(&opts1()).unwrap();
    let g = session
        .generate(
            PROMPT,
            &GenerateOptions::greedy(4).with_constraint(Constraint::Choice(vec!["x".into()])),
        )
        .unwrap();
    assert_eq!(g.text, "x");
    let g = session
        .generate(" and", &GenerateOptions::greedy(8))
        .unwrap();
    assert!(g.generated_tokens > 0);
}

#[test]
fn tool_grammar_and_lazy_constraint() {
    let Some(model) = model() else { return };
    if model
        .check_constraint(&Constraint::Regex("[0-9]+".into()))
        .is_err()
    {
        return; // built without constraints
    }
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../tests/data/chat_templates/templates/Qwen-Qwen2.5-7B-Instruct.jinja");
    let hermes = zerfoo::ChatParseOptions {
        template: Some(std::fs::read_to_string(p).unwrap()),
        tools_json: Some(
            r#"[{"type": "function", "function": {"name": "get_weather",
              "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]"#
                .into(),
        ),
        ..Default::default()
    };
    let g = model.chat_tool_grammar(&hermes, true).unwrap();
    assert!(
        g.native && g.trigger == "<tool_call>" && !g.lazy_grammar.is_empty(),
        "{g:?}"
    );
    // Required: one call in Hermes' format, read back by chat_parse.
    let text = constrained(
        model,
        "What is the weather in Paris?",
        Constraint::Lark(g.grammar),
    );
    let msg = model.chat_parse(&text, &hermes).unwrap();
    assert_eq!(msg.tool_calls.len(), 1, "{text:?}");
    assert_eq!(msg.tool_calls[0].function.name, "get_weather");
    // A lazy constraint: free until the trigger, then the constraint from where it starts.
    let prompt = model
        .apply_chat_template(
            &[ChatMessage::user(
                "Count from 1 to 10, separated by commas.",
            )],
            true,
        )
        .unwrap();
    let mut session = model.session(&opts1()).unwrap();
    let opts = GenerateOptions {
        constraint_trigger: Some("3".into()),
        ..GenerateOptions::greedy(64).with_constraint(Constraint::Regex("3, 4, done".into()))
    };
    let out = session.generate(&prompt, &opts).unwrap();
    assert!(out.text.ends_with("3, 4, done"), "{:?}", out.text);
    // Errors: no tools; a trigger without a constraint.
    let err = model
        .chat_tool_grammar(&zerfoo::ChatParseOptions::default(), false)
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidArgument);
    let opts = GenerateOptions {
        constraint_trigger: Some("x".into()),
        ..GenerateOptions::greedy(2)
    };
    let err = session.generate("hi", &opts).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidArgument);
}

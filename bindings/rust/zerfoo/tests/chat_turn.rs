//! Chat turns (`zf_chat_turn_*`) on the real SmolLM2 model: tool choices, reasoning, response
//! formats, errors, early stops and cancellation; the events always add up to the message.
mod common;

use std::ops::ControlFlow;
use std::time::Duration;

use common::{model, tools};
use zerfoo::serde_json::{self, json, Value};
use zerfoo::{
    AssistantMessage, ChatRequest, Constraint, ErrorCode, FinishReason, GenerateOptions, Message,
    ResponseFormat, Session, SessionOptions, StopReason, ToolChoice, TurnDone, TurnEvent,
    TurnOptions,
};

fn session() -> Option<Session<'static>> {
    let opts = SessionOptions {
        n_ctx: 2048,
        n_threads: 1,
        ..Default::default()
    };
    Some(model()?.session(&opts).unwrap())
}

fn greedy(max_tokens: u32) -> TurnOptions {
    TurnOptions {
        generate: GenerateOptions::greedy(max_tokens),
        ..Default::default()
    }
}

fn required_keys(tool: &str) -> &'static [&'static str] {
    match tool {
        "get_weather" => &["city"],
        "get_time" => &["timezone"],
        other => panic!("a call to a tool that was not offered: {other}"),
    }
}

/// What a turn's events say, concatenated per kind.
#[derive(Debug, Default, PartialEq)]
struct Concatenated {
    content: String,
    reasoning: String,
    calls: Vec<(String, String, String)>, // id, name, arguments
    done: Option<TurnDone>,
    kinds: Vec<&'static str>,
}

fn concatenate(events: &[TurnEvent]) -> Concatenated {
    let mut c = Concatenated::default();
    for (i, e) in events.iter().enumerate() {
        assert!(c.done.is_none(), "an event after Done: {e:?}");
        match e {
            TurnEvent::Content(t) => {
                c.content.push_str(t);
                c.kinds.push("content");
            }
            TurnEvent::Reasoning(t) => {
                c.reasoning.push_str(t);
                c.kinds.push("reasoning");
            }
            TurnEvent::ToolCall { index, id, name } => {
                assert_eq!(*index, c.calls.len(), "calls in index order (event {i})");
                c.calls.push((id.clone(), name.clone(), String::new()));
                c.kinds.push("tool_call");
            }
            TurnEvent::ToolArguments { index, text } => {
                let call = c.calls.get_mut(*index).expect("arguments after their call");
                call.2.push_str(text);
                c.kinds.push("tool_args");
            }
            TurnEvent::Logprobs(_) => c.kinds.push("logprobs"),
            TurnEvent::Done(d) => c.done = Some(*d),
            other => panic!("an unknown event: {other:?}"),
        }
    }
    assert!(c.done.is_some(), "no Done event");
    c
}

/// The events, concatenated, are the final message.
fn assert_events_are_the_message(c: &Concatenated, m: &AssistantMessage) {
    assert_eq!(c.content, m.content.clone().unwrap_or_default(), "{m:?}");
    assert_eq!(
        c.reasoning,
        m.reasoning_content.clone().unwrap_or_default(),
        "{m:?}"
    );
    let calls: Vec<(String, String, String)> = m
        .tool_calls
        .iter()
        .map(|t| {
            assert_eq!(t.kind, "function");
            (
                t.id.clone(),
                t.function.name.clone(),
                t.function.arguments.clone(),
            )
        })
        .collect();
    assert_eq!(c.calls, calls);
}

/// Iterates a whole turn: its events and final message.
fn run(
    session: &mut Session<'_>,
    request: &ChatRequest,
    opts: &TurnOptions,
) -> (Concatenated, AssistantMessage, Vec<TurnEvent>) {
    let mut turn = session.chat_turn(request, opts).unwrap();
    let events: Vec<TurnEvent> = turn.by_ref().map(|e| e.unwrap()).collect();
    assert!(turn.next().is_none(), "the iterator is fused after Done");
    let message = turn.message().unwrap();
    let c = concatenate(&events);
    assert_eq!(turn.done(), c.done.as_ref());
    assert_events_are_the_message(&c, &message);
    (c, message, events)
}

fn assert_arguments_valid(calls: &[(String, String, String)]) {
    for (id, name, args) in calls {
        assert!(!id.is_empty(), "a call without an id");
        let v: Value = serde_json::from_str(args)
            .unwrap_or_else(|e| panic!("{name}'s arguments {args:?} are not JSON: {e}"));
        let obj = v.as_object().expect("the arguments are an object");
        for key in required_keys(name) {
            assert!(obj.contains_key(*key), "{name}({args}) lacks {key}");
        }
    }
}

#[test]
fn tool_choice_required_calls_a_tool() {
    let Some(mut session) = session() else { return };
    let request = ChatRequest {
        tools: tools(),
        tool_choice: Some(ToolChoice::Required),
        ..ChatRequest::new(vec![Message::user(
            "What is the weather in Paris and the time in Tokyo?",
        )])
    };
    let (c, message, _) = run(&mut session, &request, &greedy(256));
    let done = c.done.unwrap();
    assert_eq!(done.finish_reason, FinishReason::ToolCalls, "{message:?}");
    assert!(!c.calls.is_empty());
    assert_arguments_valid(&c.calls);
    assert!(done.usage.prompt_tokens > 0 && done.usage.completion_tokens > 0);
    assert!(done.usage.completion_tokens <= 256);
    // The whole-turn call (zf_chat_turn) gives the same message on a fresh session.
    let whole = self::session()
        .unwrap()
        .chat(&request, &greedy(256))
        .unwrap();
    assert_eq!(whole.message, message);
    assert_eq!(whole.done.finish_reason, FinishReason::ToolCalls);
    assert_eq!(
        whole.done.usage.completion_tokens,
        done.usage.completion_tokens
    );
}

#[test]
fn named_tool_choice_calls_that_function() {
    let Some(mut session) = session() else { return };
    let request = ChatRequest {
        tools: tools(),
        tool_choice: Some(ToolChoice::Function("get_time".into())),
        ..ChatRequest::new(vec![Message::user("What is the weather in Paris?")])
    };
    let (c, message, _) = run(&mut session, &request, &greedy(256));
    assert_eq!(c.done.unwrap().finish_reason, FinishReason::ToolCalls);
    assert!(!c.calls.is_empty(), "{message:?}");
    for (_, name, _) in &c.calls {
        assert_eq!(name, "get_time");
    }
    assert_arguments_valid(&c.calls);
}

#[test]
fn tool_choice_auto_on_a_plain_question() {
    let Some(mut session) = session() else { return };
    let request = ChatRequest {
        tools: tools(),
        tool_choice: Some(ToolChoice::Auto),
        ..ChatRequest::new(vec![
            Message::system("You are a helpful assistant."),
            Message::user("What is the capital of France?"),
        ])
    };
    let (c, message, events) = run(&mut session, &request, &greedy(64));
    assert!(
        !c.content.is_empty() || !c.calls.is_empty(),
        "an empty turn: {message:?}"
    );
    assert_arguments_valid(&c.calls);
    let done = c.done.unwrap();
    let expected_finish = if c.calls.is_empty() {
        match done.stop_reason {
            StopReason::MaxTokens => FinishReason::Length,
            _ => FinishReason::Stop,
        }
    } else {
        FinishReason::ToolCalls
    };
    assert_eq!(done.finish_reason, expected_finish);
    // A callback (zf_chat_turn) sees the same events, and the same message comes back.
    let mut seen = Vec::new();
    let outcome = self::session()
        .unwrap()
        .chat_with(&request, &greedy(64), |e| {
            seen.push(e.clone());
            ControlFlow::Continue(())
        })
        .unwrap();
    assert_eq!(seen.len(), events.len());
    for (a, b) in seen.iter().zip(&events) {
        match (a, b) {
            // Timings differ between runs; the rest of Done is the same.
            (TurnEvent::Done(x), TurnEvent::Done(y)) => {
                assert_eq!(x.finish_reason, y.finish_reason);
                assert_eq!(x.stop_reason, y.stop_reason);
                assert_eq!(
                    x.usage.completion_tokens, y.usage.completion_tokens,
                    "{x:?} {y:?}"
                );
            }
            _ => assert_eq!(a, b),
        }
    }
    assert_eq!(outcome.message, message);
}

/// A small ChatML template that shows an assistant's reasoning inside <think>...</think>.
const THINK_TEMPLATE: &str = "{%- for message in messages -%}\
<|im_start|>{{ message.role }}\n\
{% if message.role == 'assistant' and message.reasoning_content %}<think>{{ message.reasoning_content }}</think>{% endif %}\
{{ message.content }}<|im_end|>\n\
{% endfor -%}\
{%- if add_generation_prompt %}<|im_start|>assistant\n{% endif -%}";

#[test]
fn reasoning_and_content_come_apart() {
    let Some(mut session) = session() else { return };
    let request = ChatRequest::new(vec![Message::user("What is two plus two?")]);
    let opts = TurnOptions {
        template: Some(THINK_TEMPLATE.into()),
        generate: GenerateOptions::greedy(64).with_constraint(Constraint::Regex(
            "<think>[a-z ]{5,30}</think>[A-Za-z ]{5,30}".into(),
        )),
        ..Default::default()
    };
    let (c, message, _) = run(&mut session, &request, &opts);
    assert!(c.kinds.contains(&"reasoning"), "{:?} {message:?}", c.kinds);
    assert!(c.kinds.contains(&"content"), "{:?} {message:?}", c.kinds);
    // The reasoning comes first, and neither carries the markers.
    let first_content = c.kinds.iter().position(|k| *k == "content").unwrap();
    assert!(c.kinds[..first_content].contains(&"reasoning"));
    let reasoning = message.reasoning_content.as_deref().unwrap();
    let content = message.content.as_deref().unwrap();
    assert!(
        !reasoning.is_empty()
            && reasoning
                .chars()
                .all(|ch| ch.is_ascii_lowercase() || ch == ' '),
        "{reasoning:?}"
    );
    assert!(
        !content.is_empty()
            && content
                .chars()
                .all(|ch| ch.is_ascii_alphabetic() || ch == ' '),
        "{content:?}"
    );
    assert!(c.calls.is_empty());
    // The same as generating from the rendered prompt with the constraint, then parsing.
    let prompt = "<|im_start|>user\nWhat is two plus two?<|im_end|>\n<|im_start|>assistant\n";
    let raw = self::session()
        .unwrap()
        .generate(prompt, &opts.generate)
        .unwrap();
    assert_eq!(raw.stop_reason, StopReason::Eos);
    assert!(raw.text.starts_with("<think>"), "{raw:?}");
    let parse = zerfoo::ChatParseOptions {
        template: Some(THINK_TEMPLATE.into()),
        ..Default::default()
    };
    assert_eq!(
        model().unwrap().chat_parse(&raw.text, &parse).unwrap(),
        message
    );
}

#[test]
fn response_format_json_schema() {
    let Some(mut session) = session() else { return };
    let schema = json!({
        "type": "object",
        "properties": {"name": {"type": "string", "maxLength": 20},
                       "age": {"type": "integer", "minimum": 0, "maximum": 150}},
        "required": ["name", "age"],
        "additionalProperties": false
    });
    let request = ChatRequest {
        response_format: Some(ResponseFormat::JsonSchema {
            name: "person".into(),
            schema,
        }),
        ..ChatRequest::new(vec![Message::user(
            "Make up a person. Answer with their name and age as JSON.",
        )])
    };
    let (c, message, _) = run(&mut session, &request, &greedy(128));
    let done = c.done.unwrap();
    assert_eq!(done.stop_reason, StopReason::Eos, "{message:?}");
    assert_eq!(done.finish_reason, FinishReason::Stop);
    let v: Value = serde_json::from_str(message.content.as_deref().unwrap())
        .unwrap_or_else(|e| panic!("not JSON: {message:?}: {e}"));
    assert!(v["name"].is_string(), "{v}");
    assert!(v["age"].is_u64(), "{v}");
}

#[test]
fn bad_requests_are_errors_with_the_librarys_message() {
    let Some(mut session) = session() else { return };
    // Malformed JSON, through both entry points (zf_chat_turn_begin and zf_chat_turn).
    let e = session
        .chat_turn_json(r#"{"messages": [{"role": "user""#, &greedy(8))
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidArgument);
    assert!(!e.message().is_empty());
    let e2 = session
        .chat_json(r#"{"messages": [{"role": "user""#, &greedy(8))
        .unwrap_err();
    assert_eq!(e2.code(), ErrorCode::InvalidArgument);
    assert_eq!(e2.message(), e.message());
    // A tool_choice naming no offered tool: the message names it.
    let request = ChatRequest {
        tools: tools(),
        tool_choice: Some(ToolChoice::Function("no_such_tool".into())),
        ..ChatRequest::new(vec![Message::user("Hi")])
    };
    let e = session.chat_turn(&request, &greedy(8)).unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidArgument);
    assert!(e.message().contains("no_such_tool"), "{e}");
    // A request without messages; a NUL byte never reaches the library.
    let e = session
        .chat_json(r#"{"tools": []}"#, &greedy(8))
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidArgument);
    assert!(e.message().contains("messages"), "{e}");
    let e = session
        .chat_json("{\"messages\":\0[]}", &greedy(8))
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidArgument);
    assert!(e.message().contains("NUL"), "{e}");
    // The session still works.
    let (c, _, _) = run(
        &mut session,
        &ChatRequest::new(vec![Message::user("Hi")]),
        &greedy(8),
    );
    assert!(c.done.unwrap().usage.completion_tokens > 0);
}

#[test]
fn dropping_a_turn_stops_it_and_the_next_turn_reuses_the_session() {
    let Some(model) = model() else { return };
    let Some(mut session) = session() else { return };
    let question = "Tell me a long story about a dragon.";
    let mut request = ChatRequest::new(vec![Message::user(question)]);
    let opts = greedy(200);
    let partial = {
        let mut turn = session.chat_turn(&request, &opts).unwrap();
        let mut contents = 0;
        for e in turn.by_ref() {
            if let TurnEvent::Content(_) = e.unwrap() {
                contents += 1;
                if contents == 5 {
                    break;
                }
            }
        }
        assert!(turn.done().is_none(), "stopped before the end");
        turn.message().unwrap()
    }; // dropped: zf_chat_turn_free stops the turn
    assert!(!partial.content.as_deref().unwrap_or("").is_empty());
    let kept = session.n_past().unwrap();
    // The first prompt, as the model's template renders it.
    let first_prompt = model
        .apply_chat_template(&[zerfoo::ChatMessage::user(question)], true)
        .unwrap();
    let first_prompt_tokens = model.tokenize(&first_prompt, true, true).unwrap().len();
    assert!(kept > first_prompt_tokens, "{kept} {first_prompt_tokens}");

    // The next request repeats the conversation and the answer so far.
    request.messages.push(partial.into());
    request
        .messages
        .push(Message::user("Thanks. Now in one sentence?"));
    let second = session.chat(&request, &greedy(32)).unwrap();
    let usage = second.done.usage;
    assert!(
        usage.cached_tokens >= first_prompt_tokens,
        "{usage:?}, first prompt {first_prompt_tokens} tokens"
    );
    assert!(usage.cached_tokens < usage.prompt_tokens, "{usage:?}");
    assert!(usage.completion_tokens > 0);
}

#[test]
fn a_callback_break_and_a_cancel_stop_the_turn() {
    let Some(mut session) = session() else { return };
    let request = ChatRequest::new(vec![Message::user("Tell me a long story about a dragon.")]);
    // Break after three events: the events so far are the message.
    let mut seen = Vec::new();
    let outcome = session
        .chat_with(&request, &greedy(200), |e| {
            seen.push(e.clone());
            if seen.len() == 3 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })
        .unwrap();
    assert_eq!(outcome.done.stop_reason, StopReason::Callback);
    assert_eq!(outcome.done.finish_reason, FinishReason::Stop);
    assert_eq!(seen.len(), 4, "three events, then Done: {seen:?}");
    assert_events_are_the_message(&concatenate(&seen), &outcome.message);

    // A cancel from another thread ends a long turn early.
    let cancel = session.cancel_handle();
    let unbounded = TurnOptions {
        generate: GenerateOptions {
            max_tokens: Some(1500),
            ignore_eos: true,
            ..GenerateOptions::greedy(0)
        },
        ..Default::default()
    };
    let canceller = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        cancel.cancel();
    });
    let outcome = session.chat(&request, &unbounded).unwrap();
    canceller.join().unwrap();
    assert_eq!(outcome.done.stop_reason, StopReason::Cancelled);
    assert!(outcome.done.usage.completion_tokens < 1500);

    // A panicking callback reaches the caller; the session stays usable.
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        session.chat_with(&request, &greedy(50), |_| panic!("boom"))
    }));
    let payload = r.unwrap_err();
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"boom"));
    let again = session.chat(&request, &greedy(8)).unwrap();
    assert_eq!(again.done.stop_reason, StopReason::MaxTokens);
    assert_eq!(again.done.usage.completion_tokens, 8);
}

#[test]
fn logprobs_come_with_the_events() {
    let Some(mut session) = session() else { return };
    let request = ChatRequest::new(vec![Message::user("What is the capital of France?")]);
    let opts = TurnOptions {
        generate: GenerateOptions {
            logprobs: 2,
            ..GenerateOptions::greedy(24)
        },
        ..Default::default()
    };
    let mut turn = session.chat_turn(&request, &opts).unwrap();
    let mut from_events = Vec::new();
    while let Some(e) = turn.next() {
        if let TurnEvent::Logprobs(held) = e.unwrap() {
            from_events.extend(held);
        }
        from_events.extend_from_slice(turn.event_logprobs());
    }
    let outcome = turn.finish().unwrap();
    assert_eq!(outcome.logprobs, from_events);
    // Every generated token once (the turn runs to max_tokens: no end-of-turn token).
    assert_eq!(outcome.done.stop_reason, StopReason::MaxTokens);
    assert_eq!(from_events.len(), outcome.done.usage.completion_tokens);
    // Greedy: each token is the most likely one, two alternatives each.
    for lp in &from_events {
        assert_eq!(lp.top.len(), 2);
        assert_eq!(lp.top[0].token, lp.chosen.token);
    }
    // The whole-turn call reports the same.
    let whole = self::session().unwrap().chat(&request, &opts).unwrap();
    assert_eq!(whole.logprobs.len(), from_events.len());
}

//! `Model::chat_turn_prompt` (`zf_chat_turn_prompt`) on SmolLM2: the prompt a chat turn would
//! evaluate, rendered as the turn renders it.
mod common;

use common::{model, tools};
use zerfoo::{
    ChatMessage, ChatRequest, ErrorCode, GenerateOptions, Message, SessionOptions, ToolChoice,
    TurnOptions,
};

fn template_file(stem: &str) -> String {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../tests/data/chat_templates/templates")
        .join(format!("{stem}.jinja"));
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn the_prompt_is_the_applied_template() {
    let Some(model) = model() else { return };
    let request = ChatRequest::new(vec![
        Message::system("Be brief."),
        Message::user("Name a color."),
    ]);
    let prompt = model
        .chat_turn_prompt(&request, &TurnOptions::default())
        .unwrap();
    let applied = model
        .apply_chat_template(
            &[
                ChatMessage::system("Be brief."),
                ChatMessage::user("Name a color."),
            ],
            true,
        )
        .unwrap();
    assert_eq!(prompt, applied);
    // The JSON entry point renders the same request alike.
    let from_json = model
        .chat_turn_prompt_json(&request.to_json().to_string(), &TurnOptions::default())
        .unwrap();
    assert_eq!(from_json, prompt);
}

#[test]
fn the_prompt_is_what_the_turn_evaluates() {
    let Some(model) = model() else { return };
    let request = ChatRequest::new(vec![Message::user("Name a color.")]);
    let opts = TurnOptions {
        generate: GenerateOptions::greedy(1),
        ..Default::default()
    };
    let prompt = model.chat_turn_prompt(&request, &opts).unwrap();
    let n_tokens = model.tokenize(&prompt, true, true).unwrap().len();
    let mut session = model
        .session(&SessionOptions {
            n_ctx: 512,
            n_threads: 1,
            ..Default::default()
        })
        .unwrap();
    let turn = session.chat(&request, &opts).unwrap();
    assert_eq!(turn.done.usage.prompt_tokens, n_tokens);
}

#[test]
fn a_named_tool_choice_shows_only_that_tool() {
    let Some(model) = model() else { return };
    let opts = TurnOptions {
        template: Some(template_file("Qwen-Qwen2.5-7B-Instruct")),
        time_unix: Some(1_736_937_000),
        ..Default::default()
    };
    let messages = vec![Message::user("What is the weather in Paris?")];
    let all = ChatRequest {
        tools: tools(),
        ..ChatRequest::new(messages.clone())
    };
    let prompt = model.chat_turn_prompt(&all, &opts).unwrap();
    assert!(
        prompt.contains("\"get_weather\"") && prompt.contains("\"get_time\""),
        "{prompt}"
    );
    assert!(prompt.ends_with("<|im_start|>assistant\n"), "{prompt}");

    let named = ChatRequest {
        tool_choice: Some(ToolChoice::Function("get_time".into())),
        ..all.clone()
    };
    let named_prompt = model.chat_turn_prompt(&named, &opts).unwrap();
    assert!(!named_prompt.contains("get_weather"), "{named_prompt}");
    // Exactly the prompt of a request that offers only that tool.
    let only = ChatRequest {
        tools: vec![tools().remove(1)],
        ..ChatRequest::new(messages)
    };
    assert_eq!(named_prompt, model.chat_turn_prompt(&only, &opts).unwrap());
}

#[test]
fn the_template_options_apply() {
    let Some(model) = model() else { return };
    let opts = TurnOptions {
        template: Some(
            "{{ strftime_now('%Y-%m-%d') }}|{% for m in messages %}{{ m.role }}:{{ m.content }};{% endfor %}"
                .into(),
        ),
        time_unix: Some(1_736_937_000), // 2025-01-15 10:30 UTC
        ..Default::default()
    };
    let request = ChatRequest::new(vec![Message::user("Hi")]);
    assert_eq!(
        model.chat_turn_prompt(&request, &opts).unwrap(),
        "2025-01-15|user:Hi;"
    );
    let e = model
        .chat_turn_prompt(
            &request,
            &TurnOptions {
                template_name: Some("no_such_template".into()),
                ..Default::default()
            },
        )
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::NotFound, "{e}");
}

#[test]
fn bad_requests_are_errors_with_the_librarys_message() {
    let Some(model) = model() else { return };
    let mut session = model.session(&SessionOptions::default()).unwrap();
    let greedy = TurnOptions {
        generate: GenerateOptions::greedy(4),
        ..Default::default()
    };
    // The same error, with the same message, as the turn itself.
    for bad in [r#"{"messages": [{"role": "user""#, r#"{"messages": 3}"#] {
        let e = model.chat_turn_prompt_json(bad, &greedy).unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidArgument, "{bad}: {e}");
        assert!(!e.message().is_empty());
        let turn = session.chat_json(bad, &greedy).unwrap_err();
        assert_eq!(turn.message(), e.message());
    }
    let request = ChatRequest {
        tools: tools(),
        tool_choice: Some(ToolChoice::Function("no_such_tool".into())),
        ..ChatRequest::new(vec![Message::user("Hi")])
    };
    let e = model.chat_turn_prompt(&request, &greedy).unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidArgument);
    assert!(e.message().contains("no_such_tool"), "{e}");
}

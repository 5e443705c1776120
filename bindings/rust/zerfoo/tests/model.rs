//! Model facts, metadata, the tokenizer and chat templates on SmolLM2.
mod common;

use common::model;
use zerfoo::{
    ChatMessage, ChatParseOptions, Device, ErrorCode, KvType, Model, ModelOptions, SessionOptions,
};

#[test]
fn info_and_meta() {
    let Some(model) = model() else { return };
    let info = model.info().unwrap();
    assert_eq!(info.architecture, "llama");
    assert_eq!(info.backend, Device::Cpu);
    assert_eq!(info.n_vocab, 49152);
    assert_eq!(info.n_layer, 30);
    assert!(info.n_params > 100_000_000);
    assert_eq!(
        model.meta("general.architecture").unwrap().as_deref(),
        Some("llama")
    );
    assert_eq!(
        model.meta("llama.block_count").unwrap().as_deref(),
        Some("30")
    );
    assert_eq!(model.meta("no.such.key").unwrap(), None);
    // A long value exercises the buffer-growing path.
    let template = model.meta("tokenizer.chat_template").unwrap().unwrap();
    assert!(template.len() > 256 && template.contains("im_start"));
}

#[test]
fn tokenize_round_trip() {
    let Some(model) = model() else { return };
    let text = "Hello world, ünïcödé and 日本語!";
    let tokens = model.tokenize(text, false, false).unwrap();
    assert!(tokens.len() > 5);
    assert_eq!(model.detokenize(&tokens, false, false).unwrap(), text);
    let bytes: Vec<u8> = tokens
        .iter()
        .flat_map(|&t| model.token_to_piece(t, false).unwrap())
        .collect();
    assert_eq!(bytes, text.as_bytes());
    let long = "lorem ipsum ".repeat(500);
    let t = model.tokenize(&long, false, false).unwrap();
    assert_eq!(model.detokenize(&t, false, false).unwrap(), long);
    // Special-token text is parsed only when asked.
    let eos = model.info().unwrap().token_eos.unwrap();
    let with = model.tokenize("<|im_end|>", false, true).unwrap();
    assert_eq!(with, vec![eos]);
    let without = model.tokenize("<|im_end|>", false, false).unwrap();
    assert!(without.len() > 1);
}

#[test]
fn chat_template() {
    let Some(model) = model() else { return };
    let msgs = [
        ChatMessage::system("Be brief."),
        ChatMessage::user("Hi there"),
    ];
    let with = model.apply_chat_template(&msgs, true).unwrap();
    let without = model.apply_chat_template(&msgs, false).unwrap();
    assert_eq!(
        with,
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n"
    );
    assert!(with.starts_with(&without) && with.len() > without.len());
    let bad = [ChatMessage::user("nul\0inside")];
    assert_eq!(
        model.apply_chat_template(&bad, true).unwrap_err().code(),
        zerfoo::ErrorCode::InvalidArgument
    );
}

#[test]
fn version_matches_the_header() {
    let v = zerfoo::version().unwrap();
    assert_eq!(
        v,
        format!(
            "{}.{}.{}",
            zerfoo::sys::ZF_VERSION_MAJOR,
            zerfoo::sys::ZF_VERSION_MINOR,
            zerfoo::sys::ZF_VERSION_PATCH
        )
    );
    assert_eq!(zerfoo::sys::load().unwrap(), zerfoo::sys::ZF_VERSION as u32);
}

fn template_file(stem: &str) -> String {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../tests/data/chat_templates/templates")
        .join(format!("{stem}.jinja"));
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

const TOOLS: &str = r#"[{"type": "function", "function": {"name": "get_weather", "description": "Weather",
  "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}}},
  {"type": "function", "function": {"name": "search", "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}}]"#;

/// Compares two JSON texts ignoring whitespace outside strings (the library writes compact JSON).
fn compact(json: &str) -> String {
    let mut out = String::new();
    let mut in_string = false;
    let mut escaped = false;
    for c in json.chars() {
        if in_string {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
        } else if !c.is_whitespace() {
            in_string = c == '"';
            out.push(c);
        }
    }
    out
}

#[test]
fn chat_parse() {
    let Some(model) = model() else { return };
    let hermes = ChatParseOptions {
        template: Some(template_file("Qwen-Qwen2.5-7B-Instruct")),
        tools_json: Some(TOOLS.into()),
        ..Default::default()
    };
    // Only a call: no content, the arguments as JSON text.
    let msg = model
        .chat_parse(
            "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 2}}\n</tool_call>",
            &hermes,
        )
        .unwrap();
    assert_eq!(msg.content, None);
    assert_eq!(msg.reasoning_content, None);
    assert_eq!(msg.tool_calls.len(), 1, "{}", msg.json);
    let call = &msg.tool_calls[0];
    assert_eq!(call.kind, "function");
    assert_eq!(call.function.name, "get_weather");
    assert!(call.id.starts_with("call_"), "{}", call.id);
    assert_eq!(
        compact(&call.function.arguments),
        r#"{"city":"Paris","days":2}"#
    );
    assert!(msg
        .json
        .starts_with(r#"{"role":"assistant","content":null,"#));
    // Text then two calls (compact JSON, a non-ASCII argument).
    let msg = model
        .chat_parse(
            "I'll look.\n<tool_call>{\"name\":\"search\",\"arguments\":{\"q\":\"café\"}}</tool_call>\n\
             <tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>",
            &hermes,
        )
        .unwrap();
    assert_eq!(msg.content.as_deref(), Some("I'll look."));
    let names: Vec<&str> = msg
        .tool_calls
        .iter()
        .map(|c| c.function.name.as_str())
        .collect();
    assert_eq!(names, ["search", "get_weather"]);
    assert_eq!(
        compact(&msg.tool_calls[0].function.arguments),
        r#"{"q":"café"}"#
    );
    assert_ne!(msg.tool_calls[0].id, msg.tool_calls[1].id);
    // Plain text longer than the first buffer: returned as generated (nothing read out of it).
    let long = "All work and no play. ".repeat(40);
    let msg = model.chat_parse(&long, &hermes).unwrap();
    assert_eq!(msg.content.as_deref(), Some(long.as_str()));
    assert!(msg.tool_calls.is_empty());
    // Reasoning with Qwen3's template.
    let qwen3 = ChatParseOptions {
        template: Some(template_file("Qwen-Qwen3-0.6B")),
        ..Default::default()
    };
    let msg = model
        .chat_parse("<think>\nFirst, 2+2.\n</think>\n\nIt is 4.", &qwen3)
        .unwrap();
    assert_eq!(msg.reasoning_content.as_deref(), Some("First, 2+2."));
    assert_eq!(msg.content.as_deref(), Some("It is 4."));
    // The model's own template.
    let msg = model
        .chat_parse("Hello there!", &ChatParseOptions::default())
        .unwrap();
    assert_eq!(msg.json, r#"{"role":"assistant","content":"Hello there!"}"#);
    // Errors.
    let bad_tools = ChatParseOptions {
        tools_json: Some("[oops".into()),
        ..Default::default()
    };
    let e = model.chat_parse("x", &bad_tools).unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidArgument);
    assert!(e.message().contains("tools_json"), "{e}");
    let bad_extra = ChatParseOptions {
        extra_json: Some("[1]".into()),
        ..Default::default()
    };
    let e = model.chat_parse("x", &bad_extra).unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidArgument);
    assert!(e.message().contains("extra_json"), "{e}");
    let missing = ChatParseOptions {
        template_name: Some("tool_use".into()),
        ..Default::default()
    };
    assert_eq!(
        model.chat_parse("x", &missing).unwrap_err().code(),
        ErrorCode::NotFound
    );
}

#[test]
fn prefix_cache() {
    let Some(path) = common::model_path() else {
        return;
    };
    // Off: no blocks.
    let off = ModelOptions {
        n_threads: 1,
        prefix_cache_mib: -1,
        ..Default::default()
    };
    let off = Model::load(&path, &off).unwrap();
    let c = off.cache_info().unwrap();
    assert_eq!((c.block_tokens, c.blocks, c.hit_tokens), (0, 0, 0), "{c:?}");
    drop(off);

    // The default: the second session copies the blocks the first stored, with the same logits.
    let opts = ModelOptions {
        n_threads: 1,
        ..Default::default()
    };
    let model = Model::load(&path, &opts).unwrap();
    let prompt = "The quick brown fox jumps over the lazy dog. ".repeat(20);
    let tokens = model.tokenize(&prompt, true, false).unwrap();
    assert!(
        (193..=256).contains(&tokens.len()),
        "{} tokens",
        tokens.len()
    );
    let c = model.cache_info().unwrap();
    assert_eq!((c.block_tokens, c.capacity_bytes), (64, 256 << 20), "{c:?}");
    assert_eq!((c.blocks, c.hit_tokens), (0, 0), "{c:?}");
    let last_logits = |fast_prefill: bool| {
        let opts = SessionOptions {
            n_ctx: 512,
            n_threads: 1,
            fast_prefill,
            ..Default::default()
        };
        model.session(&opts).unwrap().eval(&tokens).unwrap()
    };
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    let first = last_logits(false);
    let second = last_logits(false);
    let c = model.cache_info().unwrap();
    eprintln!("{} prompt tokens; after two sessions {c:?}", tokens.len());
    assert!(
        bits(&first) == bits(&second),
        "logits differ with the cached prefix"
    );
    assert!(c.hit_tokens >= 128 && c.blocks >= 2, "{c:?}");
    assert!(
        c.bytes > 0 && c.bytes <= c.capacity_bytes && c.stored_blocks >= c.blocks,
        "{c:?}"
    );

    // A fast-prefill session works (the same greedy token) and neither reads nor fills the cache.
    let argmax = |v: &[f32]| (0..v.len()).max_by(|&a, &b| v[a].total_cmp(&v[b])).unwrap();
    let fast = last_logits(true);
    let after = model.cache_info().unwrap();
    assert_eq!(argmax(&fast), argmax(&first));
    assert_eq!(
        (after.hit_tokens, after.stored_blocks),
        (c.hit_tokens, c.stored_blocks),
        "{after:?}"
    );
    // A live session reads the cached blocks in place (Linux: their pages mapped, not copied);
    // dropped sessions hold no mappings.
    assert_eq!(c.mapped_blocks, 0, "{c:?}");
    {
        let opts = SessionOptions {
            n_ctx: 512,
            n_threads: 1,
            ..Default::default()
        };
        let mut held = model.session(&opts).unwrap();
        held.eval(&tokens).unwrap();
        let live = model.cache_info().unwrap();
        if cfg!(target_os = "linux") {
            assert!(live.mapped_blocks >= 2, "{live:?}");
        }
    }
    assert_eq!(model.cache_info().unwrap().mapped_blocks, 0);
}

// A session with a Q8_0 KV cache (and one with Q4_0 V) generates.
#[test]
fn quantized_kv_session_generates() {
    let Some(model) = model() else { return };
    for (k, v) in [(KvType::Q8_0, None), (KvType::Q8_0, Some(KvType::Q4_0))] {
        let opts = SessionOptions {
            n_ctx: 512,
            kv_type: k,
            kv_type_v: v,
            ..Default::default()
        };
        let mut s = model.session(&opts).unwrap();
        let r = s
            .generate(
                "The capital of France is",
                &zerfoo::GenerateOptions::greedy(8),
            )
            .unwrap();
        assert_eq!(r.generated_tokens, 8, "{k:?}/{v:?}");
        assert!(!r.text.is_empty(), "{k:?}/{v:?}");
    }
}

#[test]
fn options_have_no_reserved_fields() {
    // Exhaustive patterns: these compile only while the option structs have exactly these
    // fields, so the C structs' reserved fields cannot be set through the safe API (the crate
    // zeroes them through zf_*_params_init).
    let SessionOptions {
        n_ctx: _,
        n_threads: _,
        kv_type,
        kv_type_v,
        fast_prefill,
    } = SessionOptions::default();
    assert_eq!(
        (kv_type, kv_type_v, fast_prefill),
        (KvType::F16, None, false)
    );
    let ModelOptions {
        device: _,
        gpu_index: _,
        n_threads: _,
        vocab_only: _,
        no_mmap: _,
        max_batch: _,
        prefix_cache_mib,
    } = ModelOptions::default();
    assert_eq!(prefix_cache_mib, 0);
}

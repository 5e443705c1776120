//! The request of a chat turn ([`Session::chat_turn`](crate::Session::chat_turn)): OpenAI Chat
//! Completions' fields as Rust types, written to the request JSON with `serde_json`.
use serde_json::{json, Map, Value};

use crate::chat::{AssistantMessage, ToolCall};
use crate::model::ChatMessage;

/// A chat turn's request: the conversation and what the model may answer with, in OpenAI
/// Chat Completions' terms. [`ChatRequest::to_json`] writes it as the library reads it
/// (`zf_turn_params.request_json`); sampling, `max_tokens` and stop strings are in
/// [`TurnOptions::generate`](crate::TurnOptions::generate).
///
/// ```
/// use zerfoo::{ChatRequest, Message, Tool, ToolChoice};
/// use zerfoo::serde_json::json;
/// let request = ChatRequest {
///     tools: vec![Tool::new("get_weather", "Current weather in a city",
///         json!({"type": "object", "properties": {"city": {"type": "string"}},
///                "required": ["city"]}))],
///     tool_choice: Some(ToolChoice::Required),
///     ..ChatRequest::new(vec![Message::user("Weather in Paris?")])
/// };
/// let j = request.to_json();
/// assert_eq!(j["messages"][0], json!({"role": "user", "content": "Weather in Paris?"}));
/// assert_eq!(j["tools"][0]["function"]["name"], "get_weather");
/// assert_eq!(j["tool_choice"], "required");
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ChatRequest {
    /// The conversation so far (`messages`, required).
    pub messages: Vec<Message>,
    /// The functions the model may call (`tools`; none when empty).
    pub tools: Vec<Tool>,
    /// Whether and which tool the model must call (`tool_choice`; `None`: the library's
    /// default, [`ToolChoice::Auto`]).
    pub tool_choice: Option<ToolChoice>,
    /// `parallel_tool_calls` (`None`: the library's default, true); false reads at most one
    /// call.
    pub parallel_tool_calls: Option<bool>,
    /// The answer's format (`response_format`; `None`: free text).
    pub response_format: Option<ResponseFormat>,
    /// Whether reasoning is split out of the content (`reasoning_format`; `None`: "auto").
    pub reasoning_format: Option<ReasoningFormat>,
    /// Extra template variables (`chat_template_kwargs`, e.g. `{"enable_thinking": false}`;
    /// omitted when empty).
    pub chat_template_kwargs: Map<String, Value>,
    /// Documents for templates that render them (`documents`; omitted when empty).
    pub documents: Vec<Value>,
    /// Further top-level members written as they are (a key here replaces the typed field's).
    pub extra: Map<String, Value>,
}

impl ChatRequest {
    /// A request for the next assistant turn of `messages`, everything else the defaults.
    pub fn new(messages: Vec<Message>) -> ChatRequest {
        ChatRequest {
            messages,
            ..Default::default()
        }
    }

    /// The request as the JSON object the library reads.
    pub fn to_json(&self) -> Value {
        let mut o = Map::new();
        o.insert(
            "messages".into(),
            self.messages.iter().map(Message::to_json).collect(),
        );
        if !self.tools.is_empty() {
            o.insert(
                "tools".into(),
                self.tools.iter().map(Tool::to_json).collect(),
            );
        }
        if let Some(c) = &self.tool_choice {
            o.insert("tool_choice".into(), c.to_json());
        }
        if let Some(p) = self.parallel_tool_calls {
            o.insert("parallel_tool_calls".into(), p.into());
        }
        if let Some(f) = &self.response_format {
            o.insert("response_format".into(), f.to_json());
        }
        if let Some(f) = &self.reasoning_format {
            o.insert("reasoning_format".into(), f.as_str().into());
        }
        if !self.chat_template_kwargs.is_empty() {
            o.insert(
                "chat_template_kwargs".into(),
                Value::Object(self.chat_template_kwargs.clone()),
            );
        }
        if !self.documents.is_empty() {
            o.insert("documents".into(), Value::Array(self.documents.clone()));
        }
        for (k, v) in &self.extra {
            o.insert(k.clone(), v.clone());
        }
        Value::Object(o)
    }
}

/// One message of a [`ChatRequest`]'s conversation (OpenAI's message objects).
///
/// ```
/// use zerfoo::Message;
/// use zerfoo::serde_json::json;
/// assert_eq!(Message::tool("call_1", "18 C").to_json(),
///            json!({"role": "tool", "tool_call_id": "call_1", "content": "18 C"}));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// `{"role": "system", "content": ...}`.
    System(String),
    /// `{"role": "user", "content": ...}`.
    User(String),
    /// An earlier assistant turn: its text, reasoning and tool calls (a turn's
    /// [`AssistantMessage`] converts into one with `From`).
    Assistant {
        /// The reply's text (`null` when the turn was only tool calls).
        content: Option<String>,
        /// The reasoning (`reasoning_content`), for templates that show it again.
        reasoning_content: Option<String>,
        /// The calls the turn made (`tool_calls`).
        tool_calls: Vec<ToolCall>,
    },
    /// A tool's result for the call with id `tool_call_id`.
    Tool {
        /// The id of the call this answers.
        tool_call_id: String,
        /// The result's text.
        content: String,
    },
    /// Any message object as is (content parts, names, fields of a particular template).
    Json(Value),
}

impl Message {
    /// A system message.
    pub fn system(content: impl Into<String>) -> Message {
        Message::System(content.into())
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> Message {
        Message::User(content.into())
    }

    /// A user message with images (encoded PNG, JPEG, GIF or BMP bytes) before its text, as
    /// OpenAI `image_url` parts with data: URLs; the turn needs the model's projector
    /// ([`TurnOptions::mmproj`](crate::TurnOptions::mmproj)).
    ///
    /// ```
    /// use zerfoo::Message;
    /// let m = Message::user_with_images("What is it?", &[b"GIF89a"]).to_json();
    /// assert_eq!(m["content"][0]["image_url"]["url"], "data:image/gif;base64,R0lGODlh");
    /// assert_eq!(m["content"][1]["text"], "What is it?");
    /// ```
    pub fn user_with_images(text: impl Into<String>, images: &[&[u8]]) -> Message {
        let mut parts: Vec<Value> = images
            .iter()
            .map(|b| json!({"type": "image_url", "image_url": {"url": data_url(b)}}))
            .collect();
        let text = text.into();
        if !text.is_empty() {
            parts.push(json!({"type": "text", "text": text}));
        }
        Message::Json(json!({"role": "user", "content": parts}))
    }

    /// A user message with audio clips (WAV files' bytes; [`encode_wav`](crate::encode_wav)
    /// writes samples as one) before its text, as OpenAI `input_audio` parts; the turn needs the
    /// model's audio projector ([`TurnOptions::mmproj`](crate::TurnOptions::mmproj)).
    ///
    /// ```
    /// use zerfoo::Message;
    /// let m = Message::user_with_audio("What is said?", &[b"RIFF"]).to_json();
    /// assert_eq!(m["content"][0]["type"], "input_audio");
    /// assert_eq!(m["content"][0]["input_audio"]["data"], "UklGRg==");
    /// assert_eq!(m["content"][0]["input_audio"]["format"], "wav");
    /// assert_eq!(m["content"][1]["text"], "What is said?");
    /// ```
    pub fn user_with_audio(text: impl Into<String>, wavs: &[&[u8]]) -> Message {
        let mut parts: Vec<Value> = wavs
            .iter()
            .map(|b| json!({"type": "input_audio", "input_audio": {"data": base64(b), "format": "wav"}}))
            .collect();
        let text = text.into();
        if !text.is_empty() {
            parts.push(json!({"type": "text", "text": text}));
        }
        Message::Json(json!({"role": "user", "content": parts}))
    }

    /// An assistant message with text only.
    pub fn assistant(content: impl Into<String>) -> Message {
        Message::Assistant {
            content: Some(content.into()),
            reasoning_content: None,
            tool_calls: Vec::new(),
        }
    }

    /// A tool's result.
    pub fn tool(tool_call_id: impl Into<String>, content: impl Into<String>) -> Message {
        Message::Tool {
            tool_call_id: tool_call_id.into(),
            content: content.into(),
        }
    }

    /// The message as an OpenAI message object.
    pub fn to_json(&self) -> Value {
        match self {
            Message::System(c) => json!({"role": "system", "content": c}),
            Message::User(c) => json!({"role": "user", "content": c}),
            Message::Assistant {
                content,
                reasoning_content,
                tool_calls,
            } => {
                let mut o = Map::new();
                o.insert("role".into(), "assistant".into());
                o.insert("content".into(), content.clone().into());
                if let Some(r) = reasoning_content {
                    o.insert("reasoning_content".into(), r.clone().into());
                }
                if !tool_calls.is_empty() {
                    let calls = tool_calls.iter().map(|c| {
                        json!({"id": c.id, "type": c.kind,
                               "function": {"name": c.function.name,
                                            "arguments": c.function.arguments}})
                    });
                    o.insert("tool_calls".into(), calls.collect());
                }
                Value::Object(o)
            }
            Message::Tool {
                tool_call_id,
                content,
            } => json!({"role": "tool", "tool_call_id": tool_call_id, "content": content}),
            Message::Json(v) => v.clone(),
        }
    }
}

impl From<AssistantMessage> for Message {
    /// The turn's answer as the next request's history.
    fn from(m: AssistantMessage) -> Message {
        Message::Assistant {
            content: m.content,
            reasoning_content: m.reasoning_content,
            tool_calls: m.tool_calls,
        }
    }
}

impl From<ChatMessage> for Message {
    fn from(m: ChatMessage) -> Message {
        match m.role.as_str() {
            "system" => Message::System(m.content),
            "user" => Message::User(m.content),
            "assistant" => Message::assistant(m.content),
            _ => Message::Json(json!({"role": m.role, "content": m.content})),
        }
    }
}

/// An image's bytes as a data: URL, its type by its first bytes (the library decodes by the bytes).
fn data_url(bytes: &[u8]) -> String {
    let kind = if bytes.starts_with(b"\xff\xd8\xff") {
        "jpeg"
    } else if bytes.starts_with(b"GIF8") {
        "gif"
    } else if bytes.starts_with(b"BM") {
        "bmp"
    } else {
        "png"
    };
    format!("data:image/{kind};base64,{}", base64(bytes))
}

/// Standard base64 with padding.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let t = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for (i, shift) in [18u32, 12, 6, 0].iter().enumerate() {
            out.push(if i <= chunk.len() {
                ALPHABET[((t >> shift) & 63) as usize] as char
            } else {
                '='
            });
        }
    }
    out
}

/// A function the model may call (`{"type": "function", "function": {...}}`).
#[derive(Debug, Clone, PartialEq)]
pub struct Tool {
    /// The function's name.
    pub name: String,
    /// What it does, for the model (omitted when `None`).
    pub description: Option<String>,
    /// Its arguments as a JSON schema (omitted when `null`): a required or named call's
    /// arguments are valid for it.
    pub parameters: Value,
}

impl Tool {
    /// A function with a description and a parameters schema.
    pub fn new(name: impl Into<String>, description: impl Into<String>, parameters: Value) -> Tool {
        Tool {
            name: name.into(),
            description: Some(description.into()),
            parameters,
        }
    }

    /// The tool as an OpenAI tool definition.
    pub fn to_json(&self) -> Value {
        let mut f = Map::new();
        f.insert("name".into(), self.name.clone().into());
        if let Some(d) = &self.description {
            f.insert("description".into(), d.clone().into());
        }
        if !self.parameters.is_null() {
            f.insert("parameters".into(), self.parameters.clone());
        }
        json!({"type": "function", "function": f})
    }
}

/// Whether and which tool the model must call (`tool_choice`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ToolChoice {
    /// The model answers or calls tools (`"auto"`).
    Auto,
    /// The tools are shown to the template but no calls are read (`"none"`).
    None,
    /// The turn is tool calls only (`"required"`).
    Required,
    /// The turn calls this function (`{"type": "function", "function": {"name": ...}}`);
    /// a name no tool has is [`ErrorCode::InvalidArgument`](crate::ErrorCode::InvalidArgument).
    Function(String),
}

impl ToolChoice {
    /// The `tool_choice` value.
    pub fn to_json(&self) -> Value {
        match self {
            ToolChoice::Auto => "auto".into(),
            ToolChoice::None => "none".into(),
            ToolChoice::Required => "required".into(),
            ToolChoice::Function(name) => {
                json!({"type": "function", "function": {"name": name}})
            }
        }
    }
}

/// The answer's format (`response_format`).
#[derive(Debug, Clone, PartialEq)]
pub enum ResponseFormat {
    /// Free text (`{"type": "text"}`).
    Text,
    /// Any JSON object (`{"type": "json_object"}`).
    JsonObject,
    /// JSON valid for `schema` (`{"type": "json_schema", "json_schema": {"name", "schema"}}`).
    JsonSchema {
        /// The schema's name (OpenAI requires one; the library does not read it).
        name: String,
        /// The JSON schema.
        schema: Value,
    },
}

impl ResponseFormat {
    /// The `response_format` value.
    pub fn to_json(&self) -> Value {
        match self {
            ResponseFormat::Text => json!({"type": "text"}),
            ResponseFormat::JsonObject => json!({"type": "json_object"}),
            ResponseFormat::JsonSchema { name, schema } => {
                json!({"type": "json_schema", "json_schema": {"name": name, "schema": schema}})
            }
        }
    }
}

/// Whether the model's reasoning is split out of the content (`reasoning_format`).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReasoningFormat {
    /// Reasoning in the template's markers is reported apart (`"auto"`, the default).
    Auto,
    /// The text as generated is the content (`"none"`).
    None,
}

impl ReasoningFormat {
    /// The `reasoning_format` value.
    pub fn as_str(self) -> &'static str {
        match self {
            ReasoningFormat::Auto => "auto",
            ReasoningFormat::None => "none",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::FunctionCall;

    #[test]
    fn request_json() {
        let call = ToolCall {
            id: "call_1".into(),
            kind: "function".into(),
            function: FunctionCall {
                name: "f".into(),
                arguments: r#"{"x":1}"#.into(),
            },
        };
        let mut kwargs = Map::new();
        kwargs.insert("enable_thinking".into(), false.into());
        let mut extra = Map::new();
        extra.insert("tool_choice".into(), "none".into());
        let r = ChatRequest {
            messages: vec![
                Message::system("s"),
                ChatMessage::user("u\"").into(),
                Message::Assistant {
                    content: None,
                    reasoning_content: Some("r".into()),
                    tool_calls: vec![call],
                },
                Message::tool("call_1", "1"),
            ],
            tools: vec![Tool {
                name: "f".into(),
                description: None,
                parameters: Value::Null,
            }],
            tool_choice: Some(ToolChoice::Function("f".into())),
            parallel_tool_calls: Some(false),
            response_format: Some(ResponseFormat::JsonSchema {
                name: "n".into(),
                schema: json!({"type": "object"}),
            }),
            reasoning_format: Some(ReasoningFormat::None),
            chat_template_kwargs: kwargs,
            documents: vec![json!({"text": "d"})],
            extra: Map::new(),
        };
        let expected = json!({
            "messages": [
                {"role": "system", "content": "s"},
                {"role": "user", "content": "u\""},
                {"role": "assistant", "content": null, "reasoning_content": "r",
                 "tool_calls": [{"id": "call_1", "type": "function",
                                 "function": {"name": "f", "arguments": "{\"x\":1}"}}]},
                {"role": "tool", "tool_call_id": "call_1", "content": "1"}
            ],
            "tools": [{"type": "function", "function": {"name": "f"}}],
            "tool_choice": {"type": "function", "function": {"name": "f"}},
            "parallel_tool_calls": false,
            "response_format": {"type": "json_schema",
                                "json_schema": {"name": "n", "schema": {"type": "object"}}},
            "reasoning_format": "none",
            "chat_template_kwargs": {"enable_thinking": false},
            "documents": [{"text": "d"}]
        });
        assert_eq!(r.to_json(), expected);
        // Only the messages by default; `extra` overrides a typed field.
        let plain = ChatRequest::new(vec![Message::user("hi")]);
        assert_eq!(
            plain.to_json(),
            json!({"messages": [{"role": "user", "content": "hi"}]})
        );
        let r2 = ChatRequest { extra, ..r };
        assert_eq!(r2.to_json()["tool_choice"], "none");
    }
}

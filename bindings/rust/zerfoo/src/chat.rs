//! Parsing generated text back into an OpenAI assistant message (`zf_chat_parse`), and the
//! grammar of tool calls in a template's own format (`zf_chat_tool_grammar`).
use std::ffi::CString;
use std::ptr;

use zerfoo_sys as sys;

use crate::error::{Error, ErrorCode, Result};
use crate::model::{c_string, read_buffer, Model};

/// Options of [`Model::chat_parse`]: the `zf_chat_params` fields it reads. The defaults parse
/// with the model's own `tokenizer.chat_template`, no tools offered and no extra variables.
///
/// ```
/// let opts = zerfoo::ChatParseOptions {
///     tools_json: Some(r#"[{"type": "function", "function": {"name": "search"}}]"#.into()),
///     ..Default::default()
/// };
/// assert!(opts.template.is_none());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct ChatParseOptions {
    /// Use the file's `tokenizer.chat_template.NAME` (e.g. `"tool_use"`); an unknown name is
    /// [`ErrorCode::NotFound`].
    pub template_name: Option<String>,
    /// The caller's own Jinja template (overrides the file's and `template_name`).
    pub template: Option<String>,
    /// The offered tools as a JSON array of tool definitions: their parameter types decide how
    /// text-valued arguments are read, and the generic JSON fallback accepts only their names.
    pub tools_json: Option<String>,
    /// The extra template variables the prompt was rendered with, as a JSON object (e.g.
    /// `{"enable_thinking": true}`: whether the generation prompt opened reasoning).
    pub extra_json: Option<String>,
}

/// One function call of an [`AssistantMessage`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ToolCall {
    /// The id the model wrote where the format has one, else `call_` + 16 hex digits.
    pub id: String,
    /// The call's type: `"function"`.
    pub kind: String,
    /// The called function.
    pub function: FunctionCall,
}

/// The function a [`ToolCall`] calls.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FunctionCall {
    /// The function's name.
    pub name: String,
    /// The arguments: a JSON object as text, as in the OpenAI API.
    pub arguments: String,
}

/// An OpenAI assistant message parsed from generated text by [`Model::chat_parse`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AssistantMessage {
    /// The reply's text; `None` when the turn is only tool calls.
    pub content: Option<String>,
    /// The model's reasoning (`<think>`...`</think>` and the like), when the text has any.
    pub reasoning_content: Option<String>,
    /// The tool calls, in order (empty when the turn calls no tool).
    pub tool_calls: Vec<ToolCall>,
    /// The message exactly as the library wrote it: `{"role":"assistant","content":...}`,
    /// ready to send as an OpenAI `chat.completion` message.
    pub json: String,
}

impl Model {
    /// Parses what the model generated for one assistant turn (the text after the template's
    /// generation prompt, without the end-of-turn token) back into an OpenAI assistant
    /// message: content, reasoning and tool calls, in the format of the chat template that
    /// prompted it (`zf_chat_parse`). The template's markers are derived from the template
    /// itself, so Hermes/Qwen `<tool_call>`, Llama 3.x JSON, Mistral `[TOOL_CALLS]`,
    /// Qwen3-Coder XML and others are understood alike. Thread-safe.
    ///
    /// Errors: malformed `tools_json` or `extra_json` is [`ErrorCode::InvalidArgument`]
    /// naming the field; an unknown `template_name` is [`ErrorCode::NotFound`].
    ///
    /// ```
    /// # let Some(model) = zerfoo::__doc_model() else { return Ok(()) };
    /// let msg = model.chat_parse("Hello!", &zerfoo::ChatParseOptions::default())?;
    /// assert_eq!(msg.content.as_deref(), Some("Hello!"));
    /// assert!(msg.tool_calls.is_empty());
    /// # Ok::<(), zerfoo::Error>(())
    /// ```
    pub fn chat_parse(&self, text: &str, options: &ChatParseOptions) -> Result<AssistantMessage> {
        let opt = |what: &str, s: &Option<String>| -> Result<Option<CString>> {
            s.as_deref().map(|s| c_string(what, s)).transpose()
        };
        let name = opt("template_name", &options.template_name)?;
        let template = opt("template", &options.template)?;
        let tools = opt("tools_json", &options.tools_json)?;
        let extra = opt("extra_json", &options.extra_json)?;
        let ptr_of = |c: &Option<CString>| c.as_ref().map_or(ptr::null(), |c| c.as_ptr());
        let params = sys::zf_chat_params {
            struct_size: std::mem::size_of::<sys::zf_chat_params>() as u32,
            flags: 0,
            template_name: ptr_of(&name),
            template_text: ptr_of(&template),
            tools_json: ptr_of(&tools),
            documents_json: ptr::null(),
            extra_json: ptr_of(&extra),
            time_unix: 0,
        };
        let b = read_buffer(true, |buf, cap, needed| unsafe {
            sys::zf!(zf_chat_parse(
                self.raw(),
                text.as_ptr().cast(),
                text.len(),
                &params,
                buf,
                cap,
                needed
            ))
        })?;
        let json = String::from_utf8(b).map_err(|_| bad_output("not UTF-8"))?;
        AssistantMessage::from_json(json)
    }
}

/// The constraint for tool calls in a chat template's own format ([`Model::chat_tool_grammar`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ToolGrammar {
    /// A Lark grammar ([`Constraint::Lark`]) of a turn that is only tool calls.
    ///
    /// [`Constraint::Lark`]: crate::Constraint::Lark
    pub grammar: String,
    /// A Lark grammar of the output from `trigger` on (`""` without a trigger).
    pub lazy_grammar: String,
    /// The text that opens a call (`""` if the format has none).
    pub trigger: String,
    /// Whether the template's own format is used (else the generic JSON form).
    pub native: bool,
}

impl Model {
    /// The grammar of tool calls in the format of the chat template that prompts the model
    /// (`zf_chat_tool_grammar`), each call's arguments valid for its tool's parameters:
    /// generate with `Constraint::Lark(g.grammar)` to require a call (OpenAI's
    /// `tool_choice: "required"`; offer one tool for a named choice), or with
    /// `Constraint::Lark(g.lazy_grammar)` and
    /// [`GenerateOptions::constraint_trigger`]`= Some(g.trigger)` to let the model answer
    /// freely but call tools validly. `options.tools_json` (required) lists the tools;
    /// `one_call` allows exactly one call (else up to 8). Missing or malformed tools are
    /// [`ErrorCode::InvalidArgument`]. Thread-safe.
    ///
    /// [`GenerateOptions::constraint_trigger`]: crate::GenerateOptions::constraint_trigger
    pub fn chat_tool_grammar(
        &self,
        options: &ChatParseOptions,
        one_call: bool,
    ) -> Result<ToolGrammar> {
        let opt = |what: &str, s: &Option<String>| -> Result<Option<CString>> {
            s.as_deref().map(|s| c_string(what, s)).transpose()
        };
        let name = opt("template_name", &options.template_name)?;
        let template = opt("template", &options.template)?;
        let tools = opt("tools_json", &options.tools_json)?;
        let extra = opt("extra_json", &options.extra_json)?;
        let ptr_of = |c: &Option<CString>| c.as_ref().map_or(ptr::null(), |c| c.as_ptr());
        let params = sys::zf_chat_params {
            struct_size: std::mem::size_of::<sys::zf_chat_params>() as u32,
            flags: if one_call {
                sys::ZF_CHAT_ONE_CALL as u32
            } else {
                0
            },
            template_name: ptr_of(&name),
            template_text: ptr_of(&template),
            tools_json: ptr_of(&tools),
            documents_json: ptr::null(),
            extra_json: ptr_of(&extra),
            time_unix: 0,
        };
        let b = read_buffer(true, |buf, cap, needed| unsafe {
            sys::zf!(zf_chat_tool_grammar(self.raw(), &params, buf, cap, needed))
        })?;
        let json = String::from_utf8(b).map_err(|_| bad_output("not UTF-8"))?;
        let value = Json::parse(&json).ok_or_else(|| bad_output("malformed JSON"))?;
        let Json::Object(m) = &value else {
            return Err(bad_output("not an object"));
        };
        let text = |k: &str| match get(m, k) {
            Some(Json::String(s)) => Ok(s.clone()),
            _ => Err(bad_output(&format!("{k} is not a string"))),
        };
        Ok(ToolGrammar {
            grammar: text("grammar")?,
            lazy_grammar: text("lazy_grammar")?,
            trigger: text("trigger")?,
            native: matches!(get(m, "native"), Some(Json::Bool(true))),
        })
    }
}

fn bad_output(why: &str) -> Error {
    Error::new(
        ErrorCode::Internal,
        format!("zf_chat_parse returned an unexpected message: {why}"),
    )
}

impl AssistantMessage {
    pub(crate) fn from_json(json: String) -> Result<AssistantMessage> {
        let value = Json::parse(&json).ok_or_else(|| bad_output("malformed JSON"))?;
        let Json::Object(members) = &value else {
            return Err(bad_output("not an object"));
        };
        let text = |v: Option<&Json>, what: &str| -> Result<Option<String>> {
            match v {
                None | Some(Json::Null) => Ok(None),
                Some(Json::String(s)) => Ok(Some(s.clone())),
                Some(_) => Err(bad_output(&format!("{what} is not a string"))),
            }
        };
        let content = text(get(members, "content"), "content")?;
        let reasoning_content = text(get(members, "reasoning_content"), "reasoning_content")?;
        let mut tool_calls = Vec::new();
        match get(members, "tool_calls") {
            None | Some(Json::Null) => {}
            Some(Json::Array(calls)) => {
                for call in calls {
                    let Json::Object(c) = call else {
                        return Err(bad_output("a tool call is not an object"));
                    };
                    let Some(Json::Object(f)) = get(c, "function") else {
                        return Err(bad_output("a tool call has no function"));
                    };
                    let field = |m: &[(String, Json)], k: &str| {
                        text(get(m, k), k).map(Option::unwrap_or_default)
                    };
                    tool_calls.push(ToolCall {
                        id: field(c, "id")?,
                        kind: field(c, "type")?,
                        function: FunctionCall {
                            name: field(f, "name")?,
                            arguments: field(f, "arguments")?,
                        },
                    });
                }
            }
            Some(_) => return Err(bad_output("tool_calls is not an array")),
        }
        Ok(AssistantMessage {
            content,
            reasoning_content,
            tool_calls,
            json,
        })
    }
}

fn get<'a>(members: &'a [(String, Json)], key: &str) -> Option<&'a Json> {
    members.iter().find(|(k, _)| k == key).map(|(_, v)| v)
}

/// Just enough JSON to read the library's message (no serde dependency for one object).
#[derive(Debug, PartialEq)]
enum Json {
    Null,
    Bool(bool),
    Number,
    String(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
    fn parse(s: &str) -> Option<Json> {
        let mut p = Parser {
            s: s.as_bytes(),
            i: 0,
            depth: 0,
        };
        let v = p.value()?;
        p.ws();
        (p.i == p.s.len()).then_some(v)
    }
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
    depth: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && matches!(self.s[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        self.ws();
        if self.s.get(self.i) == Some(&c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn literal(&mut self, word: &str, v: Json) -> Option<Json> {
        let end = self.i + word.len();
        (self.s.get(self.i..end)? == word.as_bytes()).then(|| {
            self.i = end;
            v
        })
    }

    fn value(&mut self) -> Option<Json> {
        self.ws();
        self.depth += 1;
        if self.depth > 64 {
            return None;
        }
        let v = match *self.s.get(self.i)? {
            b'n' => self.literal("null", Json::Null),
            b't' => self.literal("true", Json::Bool(true)),
            b'f' => self.literal("false", Json::Bool(false)),
            b'"' => self.string().map(Json::String),
            b'[' => {
                self.i += 1;
                let mut items = Vec::new();
                if !self.eat(b']') {
                    loop {
                        items.push(self.value()?);
                        if self.eat(b']') {
                            break;
                        }
                        if !self.eat(b',') {
                            return None;
                        }
                    }
                }
                Some(Json::Array(items))
            }
            b'{' => {
                self.i += 1;
                let mut members = Vec::new();
                if !self.eat(b'}') {
                    loop {
                        self.ws();
                        let k = self.string()?;
                        if !self.eat(b':') {
                            return None;
                        }
                        members.push((k, self.value()?));
                        if self.eat(b'}') {
                            break;
                        }
                        if !self.eat(b',') {
                            return None;
                        }
                    }
                }
                Some(Json::Object(members))
            }
            b'-' | b'0'..=b'9' => {
                let start = self.i;
                while self.i < self.s.len()
                    && matches!(
                        self.s[self.i],
                        b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'
                    )
                {
                    self.i += 1;
                }
                (self.i > start).then_some(Json::Number)
            }
            _ => None,
        };
        self.depth -= 1;
        v
    }

    fn hex4(&mut self) -> Option<u32> {
        let h = std::str::from_utf8(self.s.get(self.i..self.i + 4)?).ok()?;
        self.i += 4;
        u32::from_str_radix(h, 16).ok()
    }

    fn string(&mut self) -> Option<String> {
        if self.s.get(self.i) != Some(&b'"') {
            return None;
        }
        self.i += 1;
        let mut out = Vec::new();
        loop {
            let c = *self.s.get(self.i)?;
            self.i += 1;
            match c {
                b'"' => return String::from_utf8(out).ok(),
                b'\\' => {
                    let e = *self.s.get(self.i)?;
                    self.i += 1;
                    let ch = match e {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => {
                            let mut v = self.hex4()?;
                            if (0xD800..0xDC00).contains(&v) {
                                if self.s.get(self.i..self.i + 2)? != b"\\u" {
                                    return None;
                                }
                                self.i += 2;
                                let lo = self.hex4()?;
                                if !(0xDC00..0xE000).contains(&lo) {
                                    return None;
                                }
                                v = 0x10000 + ((v - 0xD800) << 10) + (lo - 0xDC00);
                            }
                            char::from_u32(v)?
                        }
                        _ => return None,
                    };
                    let mut b = [0u8; 4];
                    out.extend_from_slice(ch.encode_utf8(&mut b).as_bytes());
                }
                _ => out.push(c),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_json() {
        let m = AssistantMessage::from_json(
            r#"{"role":"assistant","content":null,"reasoning_content":"a\"b\\c\u00e9\ud83d\ude00\n","tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"x\": [1, -2.5e3, true, false, null]}"}}]}"#
                .to_string(),
        )
        .unwrap();
        assert_eq!(m.content, None);
        assert_eq!(
            m.reasoning_content.as_deref(),
            Some("a\"b\\c\u{e9}\u{1F600}\n")
        );
        assert_eq!(m.tool_calls.len(), 1);
        assert_eq!(m.tool_calls[0].id, "call_1");
        assert_eq!(m.tool_calls[0].kind, "function");
        assert_eq!(m.tool_calls[0].function.name, "f");
        assert_eq!(
            m.tool_calls[0].function.arguments,
            r#"{"x": [1, -2.5e3, true, false, null]}"#
        );
        let args = Json::parse(&m.tool_calls[0].function.arguments).unwrap();
        assert!(matches!(args, Json::Object(ref v) if v.len() == 1));
        let plain = AssistantMessage::from_json(r#"{"role":"assistant","content":"hi"}"#.into());
        assert_eq!(plain.unwrap().content.as_deref(), Some("hi"));
        for bad in [
            "",
            "[]",
            "{",
            r#"{"content": 1}"#,
            r#"{"a":"\ud800"}"#,
            "{} x",
        ] {
            assert!(AssistantMessage::from_json(bad.into()).is_err(), "{bad}");
        }
    }
}

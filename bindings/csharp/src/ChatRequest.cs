// The request of a chat turn (zf_turn_params.request_json): OpenAI Chat Completions' fields as
// C# types, written as JSON by a small writer (Mono 6.8 has no System.Text.Json). Schemas and
// other free-form JSON pass through as text.
using System;
using System.Collections;
using System.Collections.Generic;
using System.Globalization;
using System.Text;

namespace Zerfoo
{
    /// <summary>A JSON value given as text, written into the request as is (a schema, a
    /// document, a template variable). The library checks it: malformed JSON throws
    /// <see cref="ZerfooException"/> with <see cref="Status.InvalidArgument"/> naming the field.</summary>
    public sealed class RawJson
    {
        public RawJson(string json)
        {
            if (json == null) throw new ArgumentNullException("json");
            Json = json;
        }

        public string Json { get; private set; }

        public override string ToString() { return Json; }
    }

    /// <summary>One message of a <see cref="ChatRequest"/> (an OpenAI message object).</summary>
    public sealed class ChatRequestMessage
    {
        public ChatRequestMessage(string role, string content)
        {
            if (role == null) throw new ArgumentNullException("role");
            Role = role;
            Content = content;
        }

        /// <summary>"system", "user", "assistant" or "tool".</summary>
        public string Role { get; private set; }
        /// <summary>The text; null only for an assistant message that is only tool calls.</summary>
        public string Content { get; set; }
        /// <summary>An assistant message's reasoning (reasoning_content), for templates that show it.</summary>
        public string ReasoningContent { get; set; }
        /// <summary>An assistant message's tool calls (tool_calls).</summary>
        public IList<ToolCall> ToolCalls { get; set; }
        /// <summary>A tool message's answer to the call with this id (tool_call_id).</summary>
        public string ToolCallId { get; set; }
        /// <summary>The message's name (name): a tool message's function, where templates use it.</summary>
        public string Name { get; set; }

        public static ChatRequestMessage System(string content) { return new ChatRequestMessage("system", content); }
        public static ChatRequestMessage User(string content) { return new ChatRequestMessage("user", content); }

        /// <summary>A user message with images (JPEG, PNG, GIF or BMP bytes) before its text, sent
        /// as OpenAI image_url parts with data: URLs; the turn needs the model's projector
        /// (<see cref="ChatRequest.Mmproj"/>).</summary>
        public static ChatRequestMessage UserWithImages(string content, params byte[][] images)
        {
            return new ChatRequestMessage("user", content) { Images = images };
        }

        /// <summary>Images of the message (encoded bytes), placed before its text.</summary>
        public IList<byte[]> Images { get; set; }

        /// <summary>A user message with audio clips (WAV files' bytes; <see cref="Zerfoo.Audio.EncodeWav"/>
        /// writes samples as one) before its text, sent as OpenAI input_audio parts; the turn
        /// needs the model's audio projector (<see cref="ChatRequest.Mmproj"/>).</summary>
        public static ChatRequestMessage UserWithAudio(string content, params byte[][] wavs)
        {
            return new ChatRequestMessage("user", content) { Audio = wavs };
        }

        /// <summary>Audio clips of the message (WAV bytes), placed after its images, before its text.</summary>
        public IList<byte[]> Audio { get; set; }

        // An image's bytes as a data: URL, its type by its first bytes.
        static string DataUrl(byte[] b)
        {
            string kind = b.Length >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF ? "jpeg"
                        : b.Length >= 4 && b[0] == (byte)'G' && b[1] == (byte)'I' && b[2] == (byte)'F' ? "gif"
                        : b.Length >= 2 && b[0] == (byte)'B' && b[1] == (byte)'M' ? "bmp"
                        : "png";
            return "data:image/" + kind + ";base64," + Convert.ToBase64String(b);
        }

        public static ChatRequestMessage Assistant(string content, IList<ToolCall> toolCalls = null, string reasoningContent = null)
        {
            return new ChatRequestMessage("assistant", content) { ToolCalls = toolCalls, ReasoningContent = reasoningContent };
        }

        /// <summary>The answer to a previous turn's tool call <paramref name="toolCallId"/>.</summary>
        public static ChatRequestMessage Tool(string toolCallId, string content, string name = null)
        {
            if (toolCallId == null) throw new ArgumentNullException("toolCallId");
            return new ChatRequestMessage("tool", content) { ToolCallId = toolCallId, Name = name };
        }

        /// <summary>A turn's answer as the next request's history: content, reasoning and calls.</summary>
        public static ChatRequestMessage From(AssistantMessage m)
        {
            if (m == null) throw new ArgumentNullException("m");
            return Assistant(m.Content, m.ToolCalls.Count > 0 ? m.ToolCalls : null, m.ReasoningContent);
        }

        public static implicit operator ChatRequestMessage(ChatMessage m) { return new ChatRequestMessage(m.Role, m.Content); }

        internal void WriteTo(StringBuilder sb)
        {
            sb.Append("{\"role\":");
            Json.AppendString(sb, Role);
            sb.Append(",\"content\":");
            if ((Images != null && Images.Count > 0) || (Audio != null && Audio.Count > 0))
            {
                sb.Append('[');
                foreach (byte[] img in Images ?? new byte[0][])
                {
                    if (img == null) throw new ArgumentException("an image of the message is null");
                    sb.Append("{\"type\":\"image_url\",\"image_url\":{\"url\":");
                    Json.AppendString(sb, DataUrl(img));
                    sb.Append("}},");
                }
                foreach (byte[] wav in Audio ?? new byte[0][])
                {
                    if (wav == null) throw new ArgumentException("an audio clip of the message is null");
                    sb.Append("{\"type\":\"input_audio\",\"input_audio\":{\"data\":\"");
                    sb.Append(Convert.ToBase64String(wav));  // base64 needs no escaping
                    sb.Append("\",\"format\":\"wav\"}},");
                }
                if (!string.IsNullOrEmpty(Content))
                {
                    sb.Append("{\"type\":\"text\",\"text\":");
                    Json.AppendString(sb, Content);
                    sb.Append("},");
                }
                sb.Length--;  // the last comma
                sb.Append(']');
            }
            else if (Content == null) sb.Append("null");
            else Json.AppendString(sb, Content);
            if (ReasoningContent != null) { sb.Append(",\"reasoning_content\":"); Json.AppendString(sb, ReasoningContent); }
            if (ToolCalls != null && ToolCalls.Count > 0)
            {
                sb.Append(",\"tool_calls\":[");
                for (int i = 0; i < ToolCalls.Count; i++)
                {
                    ToolCall c = ToolCalls[i];
                    if (c == null) throw new ArgumentException("tool call " + i + " is null");
                    if (i > 0) sb.Append(',');
                    sb.Append("{\"id\":");
                    Json.AppendString(sb, c.Id ?? "");
                    sb.Append(",\"type\":\"function\",\"function\":{\"name\":");
                    Json.AppendString(sb, c.Function.Name);
                    sb.Append(",\"arguments\":");
                    Json.AppendString(sb, c.Function.Arguments ?? "{}");  // OpenAI: the arguments' JSON as a string
                    sb.Append("}}");
                }
                sb.Append(']');
            }
            if (ToolCallId != null) { sb.Append(",\"tool_call_id\":"); Json.AppendString(sb, ToolCallId); }
            if (Name != null) { sb.Append(",\"name\":"); Json.AppendString(sb, Name); }
            sb.Append('}');
        }
    }

    /// <summary>A function the model may call (an OpenAI tool of type "function").</summary>
    public sealed class ChatTool
    {
        /// <param name="name">The function's name.</param>
        /// <param name="description">What it does (null: none).</param>
        /// <param name="parametersSchema">Its arguments as a JSON schema text (null: no parameters);
        /// with a required or named tool_choice every call's arguments are valid for it.</param>
        public ChatTool(string name, string description = null, string parametersSchema = null)
        {
            if (name == null) throw new ArgumentNullException("name");
            Name = name;
            Description = description;
            ParametersSchema = parametersSchema;
        }

        public string Name { get; private set; }
        public string Description { get; private set; }
        public string ParametersSchema { get; private set; }

        internal void WriteTo(StringBuilder sb)
        {
            sb.Append("{\"type\":\"function\",\"function\":{\"name\":");
            Json.AppendString(sb, Name);
            if (Description != null) { sb.Append(",\"description\":"); Json.AppendString(sb, Description); }
            if (ParametersSchema != null) sb.Append(",\"parameters\":").Append(ParametersSchema);
            sb.Append("}}");
        }
    }

    /// <summary>Whether and which tools the turn calls (tool_choice).</summary>
    public sealed class ToolChoice
    {
        readonly string json;

        ToolChoice(string json) { this.json = json; }

        /// <summary>The model decides (the default): free text, and a call in the template's
        /// format is held to its tool's parameters once it starts.</summary>
        public static readonly ToolChoice Auto = new ToolChoice("\"auto\"");
        /// <summary>The tools are shown to the template, no call is read back.</summary>
        public static readonly ToolChoice None = new ToolChoice("\"none\"");
        /// <summary>The turn is one or more tool calls.</summary>
        public static readonly ToolChoice Required = new ToolChoice("\"required\"");

        /// <summary>The turn calls function <paramref name="name"/> (one of the request's tools).</summary>
        public static ToolChoice Function(string name)
        {
            if (name == null) throw new ArgumentNullException("name");
            var sb = new StringBuilder("{\"type\":\"function\",\"function\":{\"name\":");
            Json.AppendString(sb, name);
            return new ToolChoice(sb.Append("}}").ToString());
        }

        public override string ToString() { return json; }
    }

    /// <summary>The form of the answer's content (response_format).</summary>
    public sealed class ResponseFormat
    {
        readonly string json;

        ResponseFormat(string json) { this.json = json; }

        /// <summary>Free text (the default).</summary>
        public static readonly ResponseFormat Text = new ResponseFormat("{\"type\":\"text\"}");
        /// <summary>Any JSON object.</summary>
        public static readonly ResponseFormat JsonObject = new ResponseFormat("{\"type\":\"json_object\"}");

        /// <summary>JSON matching <paramref name="schema"/> (a JSON schema text).</summary>
        public static ResponseFormat JsonSchema(string schema, string name = "response")
        {
            if (schema == null) throw new ArgumentNullException("schema");
            var sb = new StringBuilder("{\"type\":\"json_schema\",\"json_schema\":{\"name\":");
            Json.AppendString(sb, name ?? "response");
            return new ResponseFormat(sb.Append(",\"schema\":").Append(schema).Append("}}").ToString());
        }

        public override string ToString() { return json; }
    }

    /// <summary>Whether reasoning is split out of the content (reasoning_format).</summary>
    public enum ReasoningFormat
    {
        /// <summary>"auto" (the default): the template's reasoning markers go to
        /// <see cref="AssistantMessage.ReasoningContent"/> and reasoning events.</summary>
        Auto,
        /// <summary>"none": the text as generated is the content.</summary>
        None,
    }

    /// <summary>A chat turn's request (<see cref="Session.ChatTurn"/>, <see cref="Session.StreamChatTurn"/>):
    /// OpenAI Chat Completions' fields, the template to render them with and the generation
    /// options. Null fields keep the library's defaults.</summary>
    public sealed class ChatRequest
    {
        public ChatRequest() { Messages = new List<ChatRequestMessage>(); }

        /// <summary>The conversation (messages). The session keeps what it already holds of the
        /// rendered prompt, so sending the whole conversation again each turn costs only the new part.</summary>
        public IList<ChatRequestMessage> Messages { get; set; }
        /// <summary>The functions the model may call (tools).</summary>
        public IList<ChatTool> Tools { get; set; }
        /// <summary>tool_choice (null: auto).</summary>
        public ToolChoice ToolChoice { get; set; }
        /// <summary>parallel_tool_calls (null: true): false reads at most one call.</summary>
        public bool? ParallelToolCalls { get; set; }
        /// <summary>response_format (null: text). Not with <see cref="ToolChoice.Required"/>.</summary>
        public ResponseFormat ResponseFormat { get; set; }
        /// <summary>reasoning_format (null: auto).</summary>
        public ReasoningFormat? ReasoningFormat { get; set; }
        /// <summary>chat_template_kwargs: extra template variables, e.g. {"enable_thinking", false}.
        /// Values: string, bool, integer and floating types, null, <see cref="RawJson"/>, and
        /// dictionaries / lists of them.</summary>
        public IDictionary<string, object> ChatTemplateKwargs { get; set; }
        /// <summary>documents (for templates that render them): each a dictionary (e.g. title,
        /// text), a string or <see cref="RawJson"/>.</summary>
        public IList<object> Documents { get; set; }

        /// <summary>The file's tokenizer.chat_template.NAME instead of its default template.</summary>
        public string TemplateName { get; set; }
        /// <summary>Your own Jinja template (overrides the file's and TemplateName).</summary>
        public string Template { get; set; }
        /// <summary>Sampling, MaxTokens, stop strings, seed, logprobs, drafts; its
        /// <see cref="GenerateOptions.Constraint"/> constrains the output (any kind, instead of
        /// ResponseFormat). NoSpecial, NoParseSpecial and ConstraintTrigger must stay unset (the
        /// turn decides them).</summary>
        public GenerateOptions Generate { get; set; }
        /// <summary>strftime_now's clock (ZF_CHAT_FIXED_TIME), for reproducible prompts; null: now.</summary>
        public DateTimeOffset? Now { get; set; }
        /// <summary>The model's projector (zf_turn_params.mmproj): the messages may then hold
        /// images (<see cref="ChatRequestMessage.Images"/>) with a vision projector, audio clips
        /// (<see cref="ChatRequestMessage.Audio"/>) with an audio projector; without it (or with
        /// the other kind) such a part is refused naming
        /// the part. It must stay undisposed while the turn begins.</summary>
        public Mmproj Mmproj { get; set; }

        /// <summary>The request JSON exactly as given, instead of the fields above (which must
        /// then be empty): for fields this type does not have.</summary>
        public string RawRequestJson { get; set; }

        /// <summary>The request JSON that zf_chat_turn_begin receives.</summary>
        public string ToJson()
        {
            if (RawRequestJson != null)
            {
                if ((Messages != null && Messages.Count > 0) || Tools != null || ToolChoice != null || ParallelToolCalls.HasValue ||
                    ResponseFormat != null || ReasoningFormat.HasValue || ChatTemplateKwargs != null || Documents != null)
                    throw new InvalidOperationException("RawRequestJson is set: the request's other JSON fields must be empty");
                return RawRequestJson;
            }
            if (Messages == null) throw new InvalidOperationException("a chat request needs Messages");
            var sb = new StringBuilder("{\"messages\":[");
            for (int i = 0; i < Messages.Count; i++)
            {
                if (Messages[i] == null) throw new ArgumentException("message " + i + " is null");
                if (i > 0) sb.Append(',');
                Messages[i].WriteTo(sb);
            }
            sb.Append(']');
            if (Tools != null)
            {
                sb.Append(",\"tools\":[");
                for (int i = 0; i < Tools.Count; i++)
                {
                    if (Tools[i] == null) throw new ArgumentException("tool " + i + " is null");
                    if (i > 0) sb.Append(',');
                    Tools[i].WriteTo(sb);
                }
                sb.Append(']');
            }
            if (ToolChoice != null) sb.Append(",\"tool_choice\":").Append(ToolChoice);
            if (ParallelToolCalls.HasValue) sb.Append(",\"parallel_tool_calls\":").Append(ParallelToolCalls.Value ? "true" : "false");
            if (ResponseFormat != null) sb.Append(",\"response_format\":").Append(ResponseFormat);
            if (ReasoningFormat.HasValue)
                sb.Append(",\"reasoning_format\":").Append(ReasoningFormat.Value == Zerfoo.ReasoningFormat.None ? "\"none\"" : "\"auto\"");
            if (ChatTemplateKwargs != null) { sb.Append(",\"chat_template_kwargs\":"); Json.AppendValue(sb, ChatTemplateKwargs, 0); }
            if (Documents != null) { sb.Append(",\"documents\":"); Json.AppendValue(sb, Documents, 0); }
            return sb.Append('}').ToString();
        }
    }

    /// <summary>JSON text out of C# values (the reading side is MiniJson in ChatParse.cs).</summary>
    internal static class Json
    {
        internal static void AppendString(StringBuilder sb, string s)
        {
            sb.Append('"');
            foreach (char c in s)
            {
                switch (c)
                {
                    case '"': sb.Append("\\\""); break;
                    case '\\': sb.Append("\\\\"); break;
                    case '\n': sb.Append("\\n"); break;
                    case '\r': sb.Append("\\r"); break;
                    case '\t': sb.Append("\\t"); break;
                    default:
                        if (c < 0x20) sb.Append("\\u").Append(((int)c).ToString("x4"));
                        else sb.Append(c);  // surrogate pairs pass through as UTF-16, encoded as UTF-8 later
                        break;
                }
            }
            sb.Append('"');
        }

        internal static void AppendValue(StringBuilder sb, object v, int depth)
        {
            if (depth > 64) throw new ArgumentException("a JSON value nests more than 64 levels");
            if (v == null) { sb.Append("null"); return; }
            var raw = v as RawJson;
            if (raw != null) { sb.Append(raw.Json); return; }
            var s = v as string;
            if (s != null) { AppendString(sb, s); return; }
            if (v is bool) { sb.Append((bool)v ? "true" : "false"); return; }
            if (v is double || v is float)
            {
                double d = Convert.ToDouble(v, CultureInfo.InvariantCulture);
                if (double.IsNaN(d) || double.IsInfinity(d)) throw new ArgumentException("JSON has no " + d);
                sb.Append(d.ToString("R", CultureInfo.InvariantCulture));
                return;
            }
            if (v is int || v is long || v is short || v is sbyte || v is byte || v is ushort || v is uint || v is ulong || v is decimal)
            {
                sb.Append(Convert.ToString(v, CultureInfo.InvariantCulture));
                return;
            }
            var pairs = v as IEnumerable<KeyValuePair<string, object>>;  // IDictionary<string, object> of any kind
            if (pairs != null)
            {
                sb.Append('{');
                bool first = true;
                foreach (KeyValuePair<string, object> e in pairs)
                {
                    if (!first) sb.Append(',');
                    first = false;
                    AppendString(sb, e.Key);
                    sb.Append(':');
                    AppendValue(sb, e.Value, depth + 1);
                }
                sb.Append('}');
                return;
            }
            var dict = v as IDictionary;
            if (dict != null)
            {
                sb.Append('{');
                bool first = true;
                foreach (DictionaryEntry e in dict)
                {
                    var key = e.Key as string;
                    if (key == null) throw new ArgumentException("a JSON object's keys are strings, not " + e.Key.GetType());
                    if (!first) sb.Append(',');
                    first = false;
                    AppendString(sb, key);
                    sb.Append(':');
                    AppendValue(sb, e.Value, depth + 1);
                }
                sb.Append('}');
                return;
            }
            var list = v as IEnumerable;
            if (list != null)
            {
                sb.Append('[');
                bool first = true;
                foreach (object item in list)
                {
                    if (!first) sb.Append(',');
                    first = false;
                    AppendValue(sb, item, depth + 1);
                }
                sb.Append(']');
                return;
            }
            throw new ArgumentException("no JSON form for a " + v.GetType());
        }
    }
}

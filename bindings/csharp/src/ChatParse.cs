// Model.ChatParse (zf_chat_parse): generated text back into an OpenAI assistant message, with a
// small JSON reader for the library's message (Mono 6.8 has no System.Text.Json).
using System;
using System.Collections.Generic;
using System.Collections.ObjectModel;
using System.Globalization;
using System.Runtime.InteropServices;
using System.Text;

namespace Zerfoo
{
    /// <summary>Options of <see cref="Model.ChatParse"/>: the zf_chat_params fields it reads. The
    /// defaults parse with the model's own tokenizer.chat_template, no tools offered and no extra
    /// variables.</summary>
    public sealed class ChatParseOptions
    {
        /// <summary>Use the file's tokenizer.chat_template.NAME (e.g. "tool_use"); an unknown
        /// name throws ZerfooException with Status.NotFound.</summary>
        public string TemplateName { get; set; }
        /// <summary>The caller's own Jinja template (overrides the file's and TemplateName).</summary>
        public string Template { get; set; }
        /// <summary>The offered tools as a JSON array of tool definitions: their parameter types
        /// decide how text-valued arguments are read, and the generic JSON fallback accepts only
        /// their names.</summary>
        public string ToolsJson { get; set; }
        /// <summary>The extra template variables the prompt was rendered with, as a JSON object
        /// (e.g. {"enable_thinking": true}: whether the generation prompt opened reasoning).</summary>
        public string ExtraJson { get; set; }
    }

    /// <summary>The function a <see cref="ToolCall"/> calls.</summary>
    public sealed class FunctionCall
    {
        internal FunctionCall(string name, string arguments) { Name = name; Arguments = arguments; }
        /// <summary>The function's name.</summary>
        public string Name { get; private set; }
        /// <summary>The arguments: a JSON object as text, as in the OpenAI API.</summary>
        public string Arguments { get; private set; }
    }

    /// <summary>One tool call of an <see cref="AssistantMessage"/>.</summary>
    public sealed class ToolCall
    {
        internal ToolCall(string id, string type, FunctionCall function) { Id = id; Type = type; Function = function; }

        /// <summary>A call of function <paramref name="name"/> with <paramref name="arguments"/> (a
        /// JSON object as text), e.g. to put an earlier turn's call into a
        /// <see cref="ChatRequestMessage.Assistant"/> message.</summary>
        public ToolCall(string id, string name, string arguments)
        {
            if (name == null) throw new ArgumentNullException("name");
            Id = id;
            Type = "function";
            Function = new FunctionCall(name, arguments ?? "{}");
        }
        /// <summary>The id the model wrote where the format has one, else "call_" + 16 hex digits.</summary>
        public string Id { get; private set; }
        /// <summary>"function".</summary>
        public string Type { get; private set; }
        /// <summary>The called function and its arguments.</summary>
        public FunctionCall Function { get; private set; }
    }

    /// <summary>An OpenAI assistant message parsed from generated text by
    /// <see cref="Model.ChatParse"/>.</summary>
    public sealed class AssistantMessage
    {
        internal AssistantMessage(string content, string reasoning, IList<ToolCall> calls, string json)
        {
            Content = content;
            ReasoningContent = reasoning;
            ToolCalls = new ReadOnlyCollection<ToolCall>(calls);
            Json = json;
        }
        /// <summary>The reply's text; null when the turn is only tool calls.</summary>
        public string Content { get; private set; }
        /// <summary>The model's reasoning (&lt;think&gt;...&lt;/think&gt; and the like); null when
        /// the text has none.</summary>
        public string ReasoningContent { get; private set; }
        /// <summary>The tool calls in order (empty when the turn calls no tool).</summary>
        public IList<ToolCall> ToolCalls { get; private set; }
        /// <summary>The message exactly as the library wrote it ({"role":"assistant",...}), ready to
        /// send as an OpenAI chat.completion message.</summary>
        public string Json { get; private set; }
    }

    /// <summary>The constraint for tool calls in a chat template's own format
    /// (<see cref="Model.ChatToolGrammar"/>).</summary>
    public sealed class ToolGrammar
    {
        internal ToolGrammar(string grammar, string lazyGrammar, string trigger, bool native)
        {
            Grammar = grammar;
            LazyGrammar = lazyGrammar;
            Trigger = trigger;
            Native = native;
        }
        /// <summary>A Lark grammar of a turn that is only tool calls.</summary>
        public string Grammar { get; private set; }
        /// <summary>A Lark grammar of the output from <see cref="Trigger"/> on ("" without one).</summary>
        public string LazyGrammar { get; private set; }
        /// <summary>The text that opens a call ("" if the format has none).</summary>
        public string Trigger { get; private set; }
        /// <summary>Whether the template's own format is used (else the generic JSON form).</summary>
        public bool Native { get; private set; }
    }

    public sealed partial class Model
    {
        /// <summary>Parses what the model generated for one assistant turn (the text after the
        /// template's generation prompt, without the end-of-turn token) back into an OpenAI
        /// assistant message: content, reasoning and tool calls, in the format of the chat
        /// template that prompted it (zf_chat_parse). The template's markers are derived from the
        /// template itself, so Hermes/Qwen &lt;tool_call&gt;, Llama 3.x JSON, Mistral [TOOL_CALLS],
        /// Qwen3-Coder XML and others are understood alike. Thread-safe.</summary>
        /// <exception cref="ZerfooException">InvalidArgument (malformed ToolsJson or ExtraJson: the
        /// message names the field), NotFound (unknown TemplateName).</exception>
        public unsafe AssistantMessage ChatParse(string text, ChatParseOptions options = null)
        {
            if (text == null) throw new ArgumentNullException("text");
            byte[] utf8 = Encoding.UTF8.GetBytes(text);
            var owned = new List<IntPtr>(4);
            Func<string, IntPtr> opt = s =>
            {
                if (s == null) return IntPtr.Zero;
                IntPtr p = Library.AllocUtf8Z(s);
                owned.Add(p);
                return p;
            };
            try
            {
                var p = new zf_chat_params();
                p.struct_size = (uint)Marshal.SizeOf(typeof(zf_chat_params));
                if (options != null)
                {
                    p.template_name = opt(options.TemplateName);
                    p.template_text = opt(options.Template);
                    p.tools_json = opt(options.ToolsJson);
                    p.extra_json = opt(options.ExtraJson);
                }
                byte[] buf = new byte[256 + 2 * utf8.Length];
                for (;;)
                {
                    UIntPtr needed;
                    int st;
                    fixed (byte* t = utf8)
                        st = NativeMethods.zf_chat_parse(handle, t, (UIntPtr)utf8.Length, ref p, buf, (UIntPtr)buf.Length, out needed);
                    if (st == (int)Status.BufferTooSmall) { buf = new byte[(int)needed]; continue; }
                    ZerfooException.Check(st, "zf_chat_parse");
                    return ParseMessage(Encoding.UTF8.GetString(buf, 0, (int)needed - 1));
                }
            }
            finally
            {
                foreach (IntPtr p in owned) Marshal.FreeHGlobal(p);
            }
        }

        /// <summary>The grammar of tool calls in the format of the chat template that prompts the
        /// model (zf_chat_tool_grammar), each call's arguments valid for its tool's parameters:
        /// generate with <c>Constraint.Lark(g.Grammar)</c> to require a call (OpenAI's tool_choice
        /// "required"; offer one tool for a named choice), or with
        /// <c>Constraint.Lark(g.LazyGrammar)</c> and <see cref="GenerateOptions.ConstraintTrigger"/>
        /// = g.Trigger to let the model answer freely but call tools validly.
        /// <paramref name="options"/>.ToolsJson (required) lists the tools; <paramref name="oneCall"/>
        /// allows exactly one call (else up to 8). Thread-safe.</summary>
        /// <exception cref="ZerfooException">InvalidArgument (no or malformed ToolsJson: the message
        /// names the field), NotFound (unknown TemplateName).</exception>
        public ToolGrammar ChatToolGrammar(ChatParseOptions options, bool oneCall = false)
        {
            if (options == null) throw new ArgumentNullException("options");
            var owned = new List<IntPtr>(4);
            Func<string, IntPtr> opt = s =>
            {
                if (s == null) return IntPtr.Zero;
                IntPtr ptr = Library.AllocUtf8Z(s);
                owned.Add(ptr);
                return ptr;
            };
            try
            {
                var p = new zf_chat_params();
                p.struct_size = (uint)Marshal.SizeOf(typeof(zf_chat_params));
                p.flags = oneCall ? 0x8u : 0u;
                p.template_name = opt(options.TemplateName);
                p.template_text = opt(options.Template);
                p.tools_json = opt(options.ToolsJson);
                p.extra_json = opt(options.ExtraJson);
                byte[] buf = new byte[4096];
                for (;;)
                {
                    UIntPtr needed;
                    int st = NativeMethods.zf_chat_tool_grammar(handle, ref p, buf, (UIntPtr)buf.Length, out needed);
                    if (st == (int)Status.BufferTooSmall) { buf = new byte[(int)needed]; continue; }
                    ZerfooException.Check(st, "zf_chat_tool_grammar");
                    var g = MiniJson.Parse(Encoding.UTF8.GetString(buf, 0, (int)needed - 1)) as Dictionary<string, object>;
                    if (g == null) throw MiniJson.Bad("not an object");
                    return new ToolGrammar((string)MiniJson.Get(g, "grammar"), (string)MiniJson.Get(g, "lazy_grammar"),
                                           (string)MiniJson.Get(g, "trigger"), MiniJson.Get(g, "native") is bool b && b);
                }
            }
            finally
            {
                foreach (IntPtr ptr in owned) Marshal.FreeHGlobal(ptr);
            }
        }

        internal static AssistantMessage ParseMessage(string json)
        {
            var msg = MiniJson.Parse(json) as Dictionary<string, object>;
            if (msg == null) throw MiniJson.Bad("not an object");
            var calls = new List<ToolCall>();
            object v;
            if (msg.TryGetValue("tool_calls", out v) && v != null)
            {
                var list = v as List<object>;
                if (list == null) throw MiniJson.Bad("tool_calls is not an array");
                foreach (object c in list)
                {
                    var call = c as Dictionary<string, object>;
                    var fn = call == null ? null : MiniJson.Get(call, "function") as Dictionary<string, object>;
                    if (fn == null) throw MiniJson.Bad("a tool call has no function");
                    calls.Add(new ToolCall(MiniJson.Str(call, "id") ?? "", MiniJson.Str(call, "type") ?? "",
                        new FunctionCall(MiniJson.Str(fn, "name") ?? "", MiniJson.Str(fn, "arguments") ?? "")));
                }
            }
            return new AssistantMessage(MiniJson.Str(msg, "content"), MiniJson.Str(msg, "reasoning_content"), calls, json);
        }
    }

    /// <summary>Just enough JSON to read the library's messages: objects become
    /// Dictionary&lt;string, object&gt;, arrays List&lt;object&gt;, strings string, numbers double,
    /// true/false bool, null null.</summary>
    internal static class MiniJson
    {
        internal static Exception Bad(string why)
        {
            return new ZerfooException(Status.Internal, "zf_chat_parse returned an unexpected message: " + why);
        }

        internal static object Get(Dictionary<string, object> o, string key)
        {
            object v;
            return o.TryGetValue(key, out v) ? v : null;
        }

        /// <summary>A string member; null when absent or null.</summary>
        internal static string Str(Dictionary<string, object> o, string key)
        {
            object v = Get(o, key);
            if (v != null && !(v is string)) throw Bad(key + " is not a string");
            return (string)v;
        }

        internal static object Parse(string s)
        {
            int i = 0;
            object v = Value(s, ref i, 0);
            Ws(s, ref i);
            if (i != s.Length) throw Bad("trailing text at " + i);
            return v;
        }

        static void Ws(string s, ref int i)
        {
            while (i < s.Length && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) i++;
        }

        static bool Eat(string s, ref int i, char c)
        {
            Ws(s, ref i);
            if (i < s.Length && s[i] == c) { i++; return true; }
            return false;
        }

        static object Value(string s, ref int i, int depth)
        {
            if (depth > 64) throw Bad("nested too deeply");
            Ws(s, ref i);
            if (i >= s.Length) throw Bad("unexpected end");
            char c = s[i];
            if (c == '"') return ReadString(s, ref i);
            if (c == '{')
            {
                i++;
                var o = new Dictionary<string, object>();
                if (Eat(s, ref i, '}')) return o;
                for (;;)
                {
                    Ws(s, ref i);
                    string k = ReadString(s, ref i);
                    if (!Eat(s, ref i, ':')) throw Bad("':' expected at " + i);
                    o[k] = Value(s, ref i, depth + 1);
                    if (Eat(s, ref i, '}')) return o;
                    if (!Eat(s, ref i, ',')) throw Bad("',' or '}' expected at " + i);
                }
            }
            if (c == '[')
            {
                i++;
                var a = new List<object>();
                if (Eat(s, ref i, ']')) return a;
                for (;;)
                {
                    a.Add(Value(s, ref i, depth + 1));
                    if (Eat(s, ref i, ']')) return a;
                    if (!Eat(s, ref i, ',')) throw Bad("',' or ']' expected at " + i);
                }
            }
            if (Word(s, ref i, "null")) return null;
            if (Word(s, ref i, "true")) return true;
            if (Word(s, ref i, "false")) return false;
            int start = i;
            while (i < s.Length && "+-.eE0123456789".IndexOf(s[i]) >= 0) i++;
            double d;
            if (i == start || !double.TryParse(s.Substring(start, i - start), NumberStyles.Float, CultureInfo.InvariantCulture, out d))
                throw Bad("unexpected character at " + start);
            return d;
        }

        static bool Word(string s, ref int i, string w)
        {
            if (string.CompareOrdinal(s, i, w, 0, w.Length) != 0) return false;
            i += w.Length;
            return true;
        }

        static string ReadString(string s, ref int i)
        {
            if (i >= s.Length || s[i] != '"') throw Bad("string expected at " + i);
            i++;
            var sb = new StringBuilder();
            for (;;)
            {
                if (i >= s.Length) throw Bad("unterminated string");
                char c = s[i++];
                if (c == '"') return sb.ToString();
                if (c != '\\') { sb.Append(c); continue; }
                if (i >= s.Length) throw Bad("unterminated string");
                char e = s[i++];
                switch (e)
                {
                    case '"': sb.Append('"'); break;
                    case '\\': sb.Append('\\'); break;
                    case '/': sb.Append('/'); break;
                    case 'b': sb.Append('\b'); break;
                    case 'f': sb.Append('\f'); break;
                    case 'n': sb.Append('\n'); break;
                    case 'r': sb.Append('\r'); break;
                    case 't': sb.Append('\t'); break;
                    case 'u':
                        int code;
                        if (i + 4 > s.Length || !int.TryParse(s.Substring(i, 4), NumberStyles.AllowHexSpecifier,
                                CultureInfo.InvariantCulture, out code))
                            throw Bad("bad \\u escape at " + i);
                        i += 4;
                        sb.Append((char)code);  // UTF-16 code units: surrogate pairs join by themselves
                        break;
                    default: throw Bad("bad escape at " + i);
                }
            }
        }
    }
}

// Chat turns (Session.ChatTurn / StreamChatTurn over zf_chat_turn*) against SmolLM2: tool
// choices, reasoning, response formats, errors, early stops and session reuse. Every streamed
// turn is checked to concatenate, kind by kind, to the library's final message. Model.ChatTurnPrompt:
// the prompt a turn evaluates, against ApplyChatTemplate, the turn's token count and its errors.
using System;
using System.Collections.Generic;
using System.IO;
using System.Linq;
using System.Runtime.CompilerServices;
using System.Text;
using System.Threading;
using NUnit.Framework;
using Zerfoo;

[TestFixture]
public class ChatTurnTests
{
    static Model model;

    const string WeatherSchema = @"{""type"": ""object"", ""properties"": {""city"": {""type"": ""string""},
  ""days"": {""type"": ""integer""}}, ""required"": [""city""]}";
    const string SearchSchema = @"{""type"": ""object"", ""properties"": {""q"": {""type"": ""string""}}, ""required"": [""q""]}";

    static readonly Dictionary<string, string[]> RequiredKeys = new Dictionary<string, string[]>
    {
        { "get_weather", new[] { "city" } },
        { "search", new[] { "q" } },
    };

    static List<ChatTool> Tools()
    {
        return new List<ChatTool>
        {
            new ChatTool("get_weather", "The weather forecast for a city", WeatherSchema),
            new ChatTool("search", "Searches the web", SearchSchema),
        };
    }

    // A ChatML template that renders an assistant's reasoning inside <think>...</think>: the
    // library derives the reasoning markers from it.
    const string ThinkTemplate =
        "{%- for message in messages %}<|im_start|>{{ message.role }}\n" +
        "{% if message.role == 'assistant' and message.reasoning_content %}<think>{{ message.reasoning_content }}</think>{% endif %}" +
        "{{ message.content }}<|im_end|>\n{% endfor %}" +
        "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

    static string Env(string name)
    {
        string v = Environment.GetEnvironmentVariable(name);
        if (string.IsNullOrEmpty(v)) Assert.Fail("test.sh sets $" + name);
        return v;
    }

    /// <summary>Qwen 2.5's template: Hermes-style &lt;tool_call&gt; calls (SmolLM2's own has no tools).</summary>
    static string HermesTemplate()
    {
        return File.ReadAllText(Path.Combine(Env("ZERFOO_CHAT_TEMPLATES"), "Qwen-Qwen2.5-7B-Instruct.jinja"), Encoding.UTF8);
    }

    static GenerateOptions Greedy(int n) { return new GenerateOptions { Temperature = 0, MaxTokens = n, Seed = 1 }; }

    static ChatRequest Ask(string question, int maxTokens = 96)
    {
        var r = new ChatRequest { Generate = Greedy(maxTokens) };
        r.Messages.Add(ChatRequestMessage.User(question));
        return r;
    }

    static void SkipWithoutConstraints()
    {
        try { model.CheckConstraint(Constraint.Regex("[0-9]+")); }
        catch (ZerfooException e) when (e.Status == Status.Unsupported) { Assert.Ignore("built without constraints: " + e.Message); }
    }

    [TestFixtureSetUp]
    public void LoadModel() { model = Model.Load(Env("ZERFOO_TEST_MODEL"), new ModelOptions { Threads = 1 }); }

    [TestFixtureTearDown]
    public void FreeModel() { model.Dispose(); }

    /// <summary>A streamed turn's events concatenated per kind.</summary>
    sealed class Collected
    {
        public readonly List<TurnEvent> Events = new List<TurnEvent>();
        public readonly StringBuilder Content = new StringBuilder(), Reasoning = new StringBuilder();
        public readonly List<string[]> Calls = new List<string[]>();  // id, name, arguments
        public readonly List<StringBuilder> Args = new List<StringBuilder>();
        public TurnDone Done;

        public void Add(TurnEvent e)
        {
            Assert.IsNull(Done, "an event after Done: " + e);
            Events.Add(e);
            Assert.IsNotNull(e.Logprobs, e.ToString());
            // Mono's mcs has no type patterns in switch: switch on Kind, then cast.
            switch (e.Kind)
            {
                case TurnEventKind.Content: Content.Append(((TurnContent)e).Text); break;
                case TurnEventKind.Reasoning: Reasoning.Append(((TurnReasoning)e).Text); break;
                case TurnEventKind.ToolCall:
                    var t = (TurnToolCall)e;
                    Assert.AreEqual(Calls.Count, t.Index, "calls come in index order");
                    Calls.Add(new[] { t.Id, t.Name });
                    Args.Add(new StringBuilder());
                    break;
                case TurnEventKind.ToolArguments:
                    var a = (TurnToolArguments)e;
                    Assert.That(a.Index, Is.InRange(0, Calls.Count - 1), "fragments follow their call's start");
                    Args[a.Index].Append(a.Text);
                    break;
                case TurnEventKind.Logprobs: Assert.IsInstanceOf<TurnLogprobs>(e); break;
                case TurnEventKind.Done: Done = (TurnDone)e; break;
                default: Assert.Fail("unknown event " + e); break;
            }
            Assert.AreEqual((int)e.Kind, e is TurnContent ? 1 : e is TurnReasoning ? 2 : e is TurnToolCall ? 3 :
                            e is TurnToolArguments ? 4 : e is TurnLogprobs ? 5 : 6);
        }

        /// <summary>The events are the final message, kind by kind.</summary>
        public void AssertIsTheMessage(AssistantMessage m)
        {
            Assert.IsNotNull(Done, "the last event is Done");
            Assert.AreEqual(m.Content ?? "", Content.ToString(), m.Json);
            Assert.AreEqual(m.ReasoningContent ?? "", Reasoning.ToString(), m.Json);
            Assert.AreEqual(m.ToolCalls.Count, Calls.Count, m.Json);
            for (int i = 0; i < Calls.Count; i++)
            {
                Assert.AreEqual(m.ToolCalls[i].Id, Calls[i][0], m.Json);
                Assert.AreEqual(m.ToolCalls[i].Function.Name, Calls[i][1], m.Json);
                Assert.AreEqual(m.ToolCalls[i].Function.Arguments, Args[i].ToString(), m.Json);
            }
        }
    }

    static Collected Stream(Session s, ChatRequest request, out ChatTurnResult result)
    {
        var got = new Collected();
        ChatTurnStream stream = s.StreamChatTurn(request);
        foreach (TurnEvent e in stream) got.Add(e);
        result = stream.Result;
        Assert.IsNotNull(result);
        got.AssertIsTheMessage(result.Message);
        Assert.AreEqual(got.Done.FinishReason, result.FinishReason);
        Assert.AreEqual(got.Done.StopReason, result.StopReason);
        Assert.AreSame(got.Done.Usage, result.Usage);
        Assert.That(result.Usage.PromptTokens, Is.GreaterThan(0));
        Assert.That(result.Usage.CachedTokens, Is.InRange(0, result.Usage.PromptTokens));
        return got;
    }

    /// <summary>Each call names an offered tool and its arguments are a JSON object with the
    /// tool's required keys.</summary>
    static void AssertValidCalls(AssistantMessage m)
    {
        foreach (ToolCall c in m.ToolCalls)
        {
            Assert.IsNotEmpty(c.Id, m.Json);
            Assert.IsTrue(RequiredKeys.ContainsKey(c.Function.Name), m.Json);
            var args = MiniJson.Parse(c.Function.Arguments) as Dictionary<string, object>;
            Assert.IsNotNull(args, c.Function.Arguments);
            foreach (string key in RequiredKeys[c.Function.Name]) Assert.IsTrue(args.ContainsKey(key), c.Function.Arguments);
        }
    }

    [Test]
    public void RequestJsonHasOpenAINames()
    {
        var r = new ChatRequest
        {
            Tools = new[] { new ChatTool("f", "d\"q", "{\"type\":\"object\"}") },
            ToolChoice = ToolChoice.Function("f"),
            ParallelToolCalls = false,
            ResponseFormat = ResponseFormat.JsonSchema("{\"type\":\"object\"}", "x"),
            ReasoningFormat = ReasoningFormat.None,
            ChatTemplateKwargs = new Dictionary<string, object> { { "enable_thinking", false }, { "n", 2.5 }, { "k", new RawJson("[1]") } },
            Documents = new List<object> { new Dictionary<string, object> { { "title", "T" }, { "text", "a\nb" } } },
        };
        r.Messages.Add(ChatMessage.System("s"));  // the template API's message converts
        r.Messages.Add(ChatRequestMessage.User("u"));
        r.Messages.Add(ChatRequestMessage.Assistant(null, new[] { new ToolCall("c1", "f", "{\"a\":1}") }));
        r.Messages.Add(ChatRequestMessage.Tool("c1", "42"));
        Assert.AreEqual(
            "{\"messages\":[{\"role\":\"system\",\"content\":\"s\"},{\"role\":\"user\",\"content\":\"u\"}," +
            "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"c1\",\"type\":\"function\",\"function\":" +
            "{\"name\":\"f\",\"arguments\":\"{\\\"a\\\":1}\"}}]},{\"role\":\"tool\",\"content\":\"42\",\"tool_call_id\":\"c1\"}]," +
            "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"description\":\"d\\\"q\",\"parameters\":{\"type\":\"object\"}}}]," +
            "\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"f\"}},\"parallel_tool_calls\":false," +
            "\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"x\",\"schema\":{\"type\":\"object\"}}}," +
            "\"reasoning_format\":\"none\",\"chat_template_kwargs\":{\"enable_thinking\":false,\"n\":2.5,\"k\":[1]}," +
            "\"documents\":[{\"title\":\"T\",\"text\":\"a\\nb\"}]}", r.ToJson());
        Assert.IsNotNull(MiniJson.Parse(r.ToJson()));
        Assert.Throws<InvalidOperationException>(() => new ChatRequest { RawRequestJson = "{}", ToolChoice = ToolChoice.Auto, Messages = null }.ToJson());
    }

    [Test]
    public void RequiredToolChoiceEndsWithValidCalls()
    {
        SkipWithoutConstraints();
        ChatRequest req = Ask("What is the weather in Paris for the next 3 days?", 128);
        req.Template = HermesTemplate();
        req.Tools = Tools();
        req.ToolChoice = ToolChoice.Required;
        ChatTurnResult streamed;
        using (var s = model.CreateSession(new SessionOptions { ContextSize = 2048 }))
            Stream(s, req, out streamed);
        Assert.AreEqual(FinishReason.ToolCalls, streamed.FinishReason, streamed.Message.Json);
        Assert.That(streamed.Message.ToolCalls.Count, Is.GreaterThanOrEqualTo(1), streamed.Message.Json);
        AssertValidCalls(streamed.Message);

        // The callback form (zf_chat_turn) on a fresh session: the same greedy turn, the same events.
        var viaCallback = new Collected();
        using (var s = model.CreateSession(new SessionOptions { ContextSize = 2048 }))
        {
            ChatTurnResult r = s.ChatTurn(req, viaCallback.Add);
            viaCallback.AssertIsTheMessage(r.Message);
            Assert.AreEqual(streamed.Message.Json, r.Message.Json);
            Assert.AreEqual(FinishReason.ToolCalls, r.FinishReason);
            Assert.AreEqual(streamed.Usage.GeneratedTokens, r.Usage.GeneratedTokens);
        }
    }

    [Test]
    public void NamedToolChoiceCallsThatFunction()
    {
        SkipWithoutConstraints();
        ChatRequest req = Ask("What is the weather in Paris?", 128);
        req.Template = HermesTemplate();
        req.Tools = Tools();
        req.ToolChoice = ToolChoice.Function("search");  // not the obvious one
        req.ParallelToolCalls = false;
        ChatTurnResult r;
        using (var s = model.CreateSession(new SessionOptions { ContextSize = 2048 }))
            Stream(s, req, out r);
        Assert.AreEqual(FinishReason.ToolCalls, r.FinishReason, r.Message.Json);
        Assert.AreEqual(1, r.Message.ToolCalls.Count, r.Message.Json);
        Assert.AreEqual("search", r.Message.ToolCalls[0].Function.Name);
        AssertValidCalls(r.Message);
    }

    [Test]
    public void AutoToolChoiceOnAPlainQuestion()
    {
        ChatRequest req = Ask("What is the capital of France? Answer in one sentence.", 48);
        req.Template = HermesTemplate();
        req.Tools = Tools();
        req.ToolChoice = ToolChoice.Auto;
        req.Generate.Logprobs = 2;
        ChatTurnResult r;
        Collected got;
        using (var s = model.CreateSession(new SessionOptions { ContextSize = 2048 }))
            got = Stream(s, req, out r);
        if (r.FinishReason == FinishReason.ToolCalls) AssertValidCalls(r.Message);
        else Assert.IsNotEmpty(r.Message.Content, r.Message.Json);
        Assert.That(r.Usage.GeneratedTokens, Is.InRange(1, 48));
        // Every generated token's log-probabilities arrive once, on some event, with 2 alternatives.
        int n = got.Events.Sum(e => e.Logprobs.Length);
        Assert.That(n, Is.InRange(1, r.Usage.GeneratedTokens), string.Join(" | ", got.Events));
        Assert.IsTrue(got.Events.SelectMany(e => e.Logprobs).All(l => l.Top.Length == 2 && l.Logprob <= 0));
    }

    [Test]
    public void ReasoningAndContentAreSplit()
    {
        SkipWithoutConstraints();
        ChatRequest req = Ask("Think briefly, then greet me.", 80);
        req.Template = ThinkTemplate;
        req.Generate.Constraint = Constraint.Regex("<think>[a-z ]{5,30}</think>[A-Za-z ]{5,30}");
        ChatTurnResult r;
        Collected got;
        using (var s = model.CreateSession(new SessionOptions { ContextSize = 1024 }))
            got = Stream(s, req, out r);
        Assert.IsTrue(got.Events.Any(e => e is TurnReasoning), string.Join(" | ", got.Events));
        Assert.IsTrue(got.Events.Any(e => e is TurnContent), string.Join(" | ", got.Events));
        StringAssert.IsMatch("^[a-z ]{1,30}$", r.Message.ReasoningContent);
        StringAssert.IsMatch("^[A-Za-z ]{1,30}$", r.Message.Content);
        Assert.AreEqual(FinishReason.Stop, r.FinishReason);
        // reasoning_format "none": the text as generated is the content.
        req.ReasoningFormat = ReasoningFormat.None;
        using (var s = model.CreateSession(new SessionOptions { ContextSize = 1024 }))
            got = Stream(s, req, out r);
        Assert.IsFalse(got.Events.Any(e => e is TurnReasoning), string.Join(" | ", got.Events));
        StringAssert.IsMatch("^<think>[a-z ]{5,30}</think>[A-Za-z ]{5,30}$", r.Message.Content);
    }

    [Test]
    public void JsonSchemaResponseFormat()
    {
        SkipWithoutConstraints();
        const string schema = "{\"type\": \"object\", \"properties\": {\"name\": {\"type\": \"string\", \"maxLength\": 24}, " +
            "\"age\": {\"type\": \"integer\"}}, \"required\": [\"name\", \"age\"], \"additionalProperties\": false}";
        ChatRequest req = Ask("Describe Alice, a 30 year old administrator, as JSON.", 96);
        req.ResponseFormat = ResponseFormat.JsonSchema(schema, "person");
        ChatTurnResult r;
        using (var s = model.CreateSession(new SessionOptions { ContextSize = 1024 }))
            Stream(s, req, out r);
        Assert.AreEqual(StopReason.Eos, r.StopReason, r.Message.Json);
        var obj = MiniJson.Parse(r.Message.Content) as Dictionary<string, object>;
        Assert.IsNotNull(obj, r.Message.Content);
        Assert.IsInstanceOf<string>(MiniJson.Get(obj, "name"), r.Message.Content);
        Assert.IsInstanceOf<double>(MiniJson.Get(obj, "age"), r.Message.Content);
        CollectionAssert.AreEquivalent(new[] { "name", "age" }, obj.Keys);
    }

    [Test]
    public void BadRequestsThrowTheLibrarysMessage()
    {
        using (var s = model.CreateSession(new SessionOptions { ContextSize = 1024 }))
        {
            // Malformed JSON: the stream throws from its first MoveNext, the callback form at once.
            var bad = new ChatRequest { RawRequestJson = "{\"messages\": [" };
            var e = Assert.Throws<ZerfooException>(() => s.StreamChatTurn(bad).GetEnumerator().MoveNext());
            Assert.AreEqual(Status.InvalidArgument, e.Status);
            StringAssert.StartsWith("zf_chat_turn_begin: ZF_ERR_INVALID_ARGUMENT: ", e.Message);
            Assert.That(e.Message.Length, Is.GreaterThan("zf_chat_turn_begin: ZF_ERR_INVALID_ARGUMENT: ".Length + 8), e.Message);
            e = Assert.Throws<ZerfooException>(() => s.ChatTurn(bad));
            Assert.AreEqual(Status.InvalidArgument, e.Status);
            StringAssert.StartsWith("zf_chat_turn: ZF_ERR_INVALID_ARGUMENT: ", e.Message);

            // A tool_choice naming no offered tool: the message names it.
            ChatRequest req = Ask("Hi");
            req.Tools = Tools();
            req.ToolChoice = ToolChoice.Function("no_such_tool");
            e = Assert.Throws<ZerfooException>(() => s.StreamChatTurn(req).GetEnumerator().MoveNext());
            Assert.AreEqual(Status.InvalidArgument, e.Status);
            StringAssert.Contains("no_such_tool", e.Message);

            // Messages that are not an array: a field of the wrong type, named.
            e = Assert.Throws<ZerfooException>(() => s.ChatTurn(new ChatRequest { RawRequestJson = "{\"messages\": 3}" }));
            Assert.AreEqual(Status.InvalidArgument, e.Status);
            StringAssert.Contains("messages", e.Message);

            // A failed begin evaluated nothing (CachedTokens would not tell: the model's prefix
            // cache may hold the prompt's start from another session of this fixture), and
            // nothing was left busy or leaked: the session still runs a turn.
            Assert.AreEqual(0, s.TokensInContext, "a failed begin evaluated nothing");
            ChatTurnResult ok = s.ChatTurn(Ask("Say hi.", 8));
            Assert.That(ok.Usage.GeneratedTokens, Is.InRange(1, 8));
        }
    }

    [Test]
    public void EarlyStopAndCancelLeaveTheSessionReusable()
    {
        int liveTurns = TurnHandle.LiveCount;
        using (var s = model.CreateSession(new SessionOptions { ContextSize = 2048 }))
        {
            // 1. break after the first content event: the message so far is the result.
            ChatRequest first = Ask("Tell me a long story about a dragon.", 200);
            ChatTurnStream stream = s.StreamChatTurn(first);
            var seen = new StringBuilder();
            foreach (TurnEvent e in stream)
            {
                var c = e as TurnContent;
                if (c == null) continue;
                seen.Append(c.Text);
                if (seen.Length >= 10) break;
            }
            Assert.AreEqual(StopReason.Callback, stream.Result.StopReason);
            Assert.IsNull(stream.Result.Usage);
            StringAssert.StartsWith(seen.ToString(), stream.Result.Message.Content ?? "");
            Assert.AreEqual(liveTurns, TurnHandle.LiveCount, "the turn is freed by the break");

            // 2. the next turn repeats that conversation plus the answer: the session keeps it.
            ChatRequest second = Ask("Tell me a long story about a dragon.", 8);
            second.Messages.Add(ChatRequestMessage.From(stream.Result.Message));
            second.Messages.Add(ChatRequestMessage.User("Now a short one."));
            ChatTurnResult r = s.ChatTurn(second);
            Assert.That(r.Usage.CachedTokens, Is.GreaterThan(0), r.Usage.ToString());
            Assert.That(r.Usage.CachedTokens, Is.LessThan(r.Usage.PromptTokens), r.Usage.ToString());

            // 3. a token cancelled mid-stream: the loop throws, the turn is stopped.
            using (var cts = new CancellationTokenSource())
            {
                ChatTurnStream cancelled = s.StreamChatTurn(Ask("Count from one to fifty in words.", 200), cts.Token);
                int events = 0;
                Assert.Throws<OperationCanceledException>(() =>
                {
                    foreach (TurnEvent e in cancelled)
                        if (++events == 3) cts.Cancel();
                });
                Assert.AreEqual(3, events, "no event after the cancel");
                Assert.AreEqual(StopReason.Cancelled, cancelled.Result.StopReason);
            }

            // 4. cancelled inside the callback form (zf_session_cancel while zf_chat_turn runs).
            using (var cts = new CancellationTokenSource())
            {
                int events = 0;
                Assert.Throws<OperationCanceledException>(() =>
                    s.ChatTurn(Ask("Count from one to fifty in words.", 200), e => { if (++events == 3) cts.Cancel(); }, cts.Token));
                Assert.That(events, Is.InRange(3, 6), "stopped within a token or so");
            }

            // 5. an exception in the callback stops the turn and comes out as is.
            var boom = Assert.Throws<ApplicationException>(() => s.ChatTurn(Ask("Hello!", 64), e => { throw new ApplicationException("boom"); }));
            Assert.AreEqual("boom", boom.Message);

            // No cancel leaks into the next call, and the conversation cache still works.
            ChatRequest again = Ask("Tell me a long story about a dragon.", 8);
            ChatTurnResult a = s.ChatTurn(again);
            Assert.AreNotEqual(StopReason.Cancelled, a.StopReason);
            Assert.AreEqual(8, a.Usage.GeneratedTokens);
            ChatTurnResult b = s.ChatTurn(again);  // the same prompt again: all of it but the last token is kept
            Assert.That(b.Usage.CachedTokens, Is.GreaterThanOrEqualTo(b.Usage.PromptTokens - 1), b.Usage.ToString());
            Assert.AreEqual(a.Message.Json, b.Message.Json);
        }
        Assert.AreEqual(liveTurns, TurnHandle.LiveCount);
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void StartAndAbandonTurn(Session s)
    {
        IEnumerator<TurnEvent> e = s.StreamChatTurn(Ask("Tell me a long story about a dragon.", 400)).GetEnumerator();
        Assert.IsTrue(e.MoveNext());
    }

    [Test]
    public void AnAbandonedTurnIsStoppedByItsFinalizer()
    {
        const int n = 3;
        var sessions = Enumerable.Range(0, n).Select(_ => model.CreateSession(new SessionOptions { ContextSize = 1024 })).ToArray();
        try
        {
            // As for abandoned text streams (ZerfooTests): started on a thread that then ends, and
            // three of them, since Mono's conservative stack scan may keep one reachable.
            int before = Volatile.Read(ref ChatTurnStream.FinalizedEnumerators);
            var t = new Thread(() => { foreach (Session s in sessions) StartAndAbandonTurn(s); });
            t.Start();
            t.Join();
            var deadline = DateTime.UtcNow.AddSeconds(10);
            while (Volatile.Read(ref ChatTurnStream.FinalizedEnumerators) - before < n && DateTime.UtcNow < deadline)
            {
                GC.Collect();
                GC.WaitForPendingFinalizers();
                Thread.Sleep(10);
            }
            int finalized = Volatile.Read(ref ChatTurnStream.FinalizedEnumerators) - before;
            if (finalized == 0) Assert.Inconclusive("no abandoned enumerator was finalized (conservative GC kept them reachable)");
            int free = 0;
            foreach (Session s in sessions)
            {
                try
                {
                    ChatTurnResult r = s.ChatTurn(Ask("Tell me a long story about a dragon.", 4));
                    Assert.That(r.Usage.CachedTokens, Is.GreaterThan(0), "the stopped turn's prompt was kept");
                    free++;
                }
                catch (InvalidOperationException)
                {
                    // still owned by an enumerator the GC kept
                }
            }
            Assert.AreEqual(finalized, free, "each finalized enumerator freed its turn and its session");
        }
        finally
        {
            foreach (Session s in sessions) s.Dispose();
        }
    }

    [Test]
    public void AStreamOwnsTheSessionUntilItEnds()
    {
        using (var s = model.CreateSession(new SessionOptions { ContextSize = 1024 }))
        {
            ChatTurnStream stream = s.StreamChatTurn(Ask("Hello!", 16));
            using (IEnumerator<TurnEvent> e = stream.GetEnumerator())
            {
                Assert.IsTrue(e.MoveNext());
                Assert.Throws<InvalidOperationException>(() => s.ChatTurn(Ask("Hi", 4)));
                Assert.Throws<InvalidOperationException>(() => stream.GetEnumerator());
                while (e.MoveNext()) { }
                Assert.IsInstanceOf<TurnDone>(e.Current);
                Assert.IsFalse(e.MoveNext());
                Assert.IsNotNull(s.ChatTurn(Ask("Hi", 4)).Message, "free once the turn is done, before Dispose");
            }
        }
    }

    // Model.ChatTurnPrompt (zf_chat_turn_prompt): the prompt a turn would evaluate.

    [Test]
    public void TurnPromptIsTheAppliedTemplate()
    {
        var req = new ChatRequest();
        req.Messages.Add(ChatRequestMessage.System("Be brief."));
        req.Messages.Add(ChatRequestMessage.User("Name a color."));
        string prompt = model.ChatTurnPrompt(req);
        Assert.AreEqual(model.ApplyChatTemplate(new[] { ChatMessage.System("Be brief."), ChatMessage.User("Name a color.") }), prompt);

        // Tokenized with special tokens, it is the prompt the turn evaluates.
        req.Generate = Greedy(1);
        using (var s = model.CreateSession(new SessionOptions { ContextSize = 512 }))
            Assert.AreEqual(model.Tokenize(prompt).Length, s.ChatTurn(req).Usage.PromptTokens);

        // The request's template and clock apply.
        var dated = Ask("Hi");
        dated.Template = "{{ strftime_now('%Y-%m-%d') }}|{% for m in messages %}{{ m.role }}:{{ m.content }};{% endfor %}";
        dated.Now = new DateTimeOffset(2025, 1, 15, 10, 30, 0, TimeSpan.Zero);
        Assert.AreEqual("2025-01-15|user:Hi;", model.ChatTurnPrompt(dated));
        var e = Assert.Throws<ZerfooException>(() => model.ChatTurnPrompt(new ChatRequest { TemplateName = "no_such_template", Messages = { ChatRequestMessage.User("Hi") } }));
        Assert.AreEqual(Status.NotFound, e.Status);
    }

    [Test]
    public void TurnPromptShowsOnlyTheNamedTool()
    {
        ChatRequest all = Ask("What is the weather in Paris?");
        all.Tools = Tools();
        all.Template = HermesTemplate();
        all.Now = new DateTimeOffset(2025, 1, 15, 10, 30, 0, TimeSpan.Zero);
        string prompt = model.ChatTurnPrompt(all);
        StringAssert.Contains("\"get_weather\"", prompt);
        StringAssert.Contains("\"search\"", prompt);
        StringAssert.EndsWith("<|im_start|>assistant\n", prompt);

        all.ToolChoice = ToolChoice.Function("search");
        string named = model.ChatTurnPrompt(all);
        StringAssert.DoesNotContain("get_weather", named);
        // Exactly the prompt of a request offering only that tool.
        ChatRequest only = Ask("What is the weather in Paris?");
        only.Tools = new List<ChatTool> { Tools()[1] };
        only.Template = all.Template;
        only.Now = all.Now;
        Assert.AreEqual(model.ChatTurnPrompt(only), named);
    }

    [Test]
    public void TurnPromptBadRequestsThrowTheTurnsMessage()
    {
        const string prefix = "zf_chat_turn_prompt: ZF_ERR_INVALID_ARGUMENT: ";
        ChatRequest noTool = Ask("Hi");
        noTool.Tools = Tools();
        noTool.ToolChoice = ToolChoice.Function("no_such_tool");
        var cases = new[]
        {
            new ChatRequest { RawRequestJson = "{\"messages\": [" },
            new ChatRequest { RawRequestJson = "{\"messages\": 3}" },
            noTool,
        };
        using (var s = model.CreateSession(new SessionOptions { ContextSize = 512 }))
        {
            foreach (ChatRequest bad in cases)
            {
                var e = Assert.Throws<ZerfooException>(() => model.ChatTurnPrompt(bad));
                Assert.AreEqual(Status.InvalidArgument, e.Status);
                StringAssert.StartsWith(prefix, e.Message);
                Assert.That(e.Message.Length, Is.GreaterThan(prefix.Length + 8), e.Message);
                // The same library message as the turn's own.
                var t = Assert.Throws<ZerfooException>(() => s.ChatTurn(bad));
                Assert.AreEqual(e.Message.Substring(prefix.Length), t.Message.Substring("zf_chat_turn: ZF_ERR_INVALID_ARGUMENT: ".Length));
            }
        }
        StringAssert.Contains("no_such_tool", Assert.Throws<ZerfooException>(() => model.ChatTurnPrompt(noTool)).Message);
    }
}

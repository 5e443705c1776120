// Tests of the C# binding under Mono (NUnit 2.6 from Debian) against the freshly built library
// and SmolLM2. Environment (set by bindings/csharp/test.sh):
//   ZERFOO_LIBRARY      libzerfoo.so.0 to test
//   ZERFOO_TEST_MODEL   smollm2-135m-instruct-q4_1.gguf
//   ZERFOO_CLI          the C CLI, for the greedy-parity test
//   ZERFOO_ABI_TABLE    the table tests/abi_table.py generated from include/zerfoo.h
//   ZERFOO_LOADCHECK    LoadCheck.exe plus the fake libraries test.sh built next to it
//   ZERFOO_CHAT_TEMPLATES  tests/data/chat_templates/templates (the Jinja corpus)
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.IO;
using System.Linq;
using System.Reflection;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using System.Text;
using System.Threading;
using NUnit.Framework;
using Zerfoo;

[TestFixture]
public class ZerfooTests
{
    const string Prompt = "The capital of France is";
    static Model model;
    static string greedy32;  // the binding's greedy 32-token continuation of Prompt

    static string Env(string name)
    {
        string v = Environment.GetEnvironmentVariable(name);
        if (string.IsNullOrEmpty(v)) Assert.Fail("test.sh sets $" + name);
        return v;
    }

    static string ModelPath { get { return Env("ZERFOO_TEST_MODEL"); } }

    static GenerateOptions Greedy(int n)
    {
        return new GenerateOptions { Temperature = 0, MaxTokens = n };
    }

    [TestFixtureSetUp]
    public void LoadModel()
    {
        model = Model.Load(ModelPath, new ModelOptions { Threads = 1 });
        using (var s = model.CreateSession(new SessionOptions { ContextSize = 256 }))
            greedy32 = s.Generate(Prompt, Greedy(32)).Text;
    }

    [TestFixtureTearDown]
    public void FreeModel() { model.Dispose(); }

    // ------------------------------------------------------------------ constraints

    /// <summary>A greedy chat turn under <paramref name="c"/>; a complete text ends with Eos.</summary>
    static string Constrained(string question, Constraint c)
    {
        string prompt = model.ApplyChatTemplate(new[] { ChatMessage.User(question) });
        using (var s = model.CreateSession(new SessionOptions { ContextSize = 1024 }))
        {
            var o = Greedy(200);
            o.Constraint = c;
            GenerateResult r = s.Generate(prompt, o);
            Assert.AreEqual(StopReason.Eos, r.StopReason, r.Text);
            return r.Text;
        }
    }

    [Test]
    public void ToolGrammarAndLazyConstraint()
    {
        try { model.CheckConstraint(Constraint.Regex("[0-9]+")); }
        catch (ZerfooException e) when (e.Status == Status.Unsupported) { Assert.Ignore("built without constraints: " + e.Message); }
        var hermes = new ChatParseOptions { Template = TemplateFile("Qwen-Qwen2.5-7B-Instruct"), ToolsJson = ParseTools };
        ToolGrammar g = model.ChatToolGrammar(hermes, oneCall: true);
        Assert.IsTrue(g.Native);
        Assert.AreEqual("<tool_call>", g.Trigger);
        Assert.IsNotEmpty(g.LazyGrammar);
        // Required: one call in Hermes' format, read back by ChatParse.
        string text = Constrained("What is the weather in Paris?", Constraint.Lark(g.Grammar));
        AssistantMessage msg = model.ChatParse(text, hermes);
        Assert.AreEqual(1, msg.ToolCalls.Count, text);
        // A lazy constraint: free until the trigger, then the constraint from where it starts.
        string prompt = model.ApplyChatTemplate(new[] { ChatMessage.User("Count from 1 to 10, separated by commas.") });
        using (var s = model.CreateSession(new SessionOptions { ContextSize = 1024 }))
        {
            var o = Greedy(64);
            o.Constraint = Constraint.Regex("3, 4, done");
            o.ConstraintTrigger = "3";
            GenerateResult r = s.Generate(prompt, o);
            StringAssert.EndsWith("3, 4, done", r.Text);
            // A trigger without a constraint.
            var bad = Greedy(2);
            bad.ConstraintTrigger = "x";
            var e = Assert.Throws<ZerfooException>(() => s.Generate("hi", bad));
            Assert.AreEqual(Status.InvalidArgument, e.Status);
        }
        var e2 = Assert.Throws<ZerfooException>(() => model.ChatToolGrammar(new ChatParseOptions()));
        Assert.AreEqual(Status.InvalidArgument, e2.Status);
        StringAssert.Contains("tools_json", e2.Message);
    }

    [Test]
    public void ConstraintsShapeTheOutput()
    {
        try { model.CheckConstraint(Constraint.Regex("[0-9]+")); }
        catch (ZerfooException e) when (e.Status == Status.Unsupported) { Assert.Ignore("built without constraints: " + e.Message); }

        const string schema = "{\"type\": \"object\", \"properties\": {\"name\": {\"type\": \"string\", \"maxLength\": 24}, " +
            "\"age\": {\"type\": \"integer\", \"minimum\": 0, \"maximum\": 150}}, \"required\": [\"name\", \"age\"], " +
            "\"additionalProperties\": false}";
        model.CheckConstraint(ConstraintKind.JsonSchema, schema);
        string text = Constrained("Describe Alice, a 30 year old administrator, as JSON.", Constraint.JsonSchema(schema));
        var obj = MiniJson.Parse(text) as Dictionary<string, object>;
        Assert.IsNotNull(obj, text);
        Assert.IsInstanceOf<string>(MiniJson.Get(obj, "name"), text);
        var age = MiniJson.Get(obj, "age");
        Assert.IsInstanceOf<double>(age, text);
        Assert.That((double)age, Is.InRange(0.0, 150.0));
        Assert.AreEqual((double)age, Math.Floor((double)age), text);
        CollectionAssert.IsSubsetOf(obj.Keys, new[] { "name", "age" });

        const string re = "(yes|no), because [a-z ,]{1,60}\\.";
        text = Constrained("Is the sky blue? Answer yes or no and explain.", Constraint.Regex(re));
        StringAssert.IsMatch("^" + re + "$", text);

        var choices = new[] { "red", "green", "blue \"dark\"", "no idea" };
        text = Constrained("What colour is grass?", Constraint.Choice(choices));
        CollectionAssert.Contains(choices, text);

        text = Constrained("What is 6 times 7?", Constraint.Lark("start: \"The answer is \" NUMBER \".\"\nNUMBER: /[0-9]{1,4}/\n"));
        StringAssert.IsMatch("^The answer is [0-9]{1,4}\\.$", text);

        // Invalid constraints: InvalidArgument with the compiler's message, nothing evaluated;
        // CheckConstraint says the same.
        var bad = new[]
        {
            new { C = Constraint.Regex("([a-z"), Message = "invalid regular expression" },
            new { C = Constraint.JsonSchema("{\"type\": 12}"), Message = "invalid JSON schema" },
            new { C = Constraint.Choice(), Message = "non-empty" },
            new { C = Constraint.Lark("start: missing_rule"), Message = "Lark grammar" },
        };
        foreach (var b in bad)
        {
            using (var s = model.CreateSession(new SessionOptions { ContextSize = 256 }))
            {
                var o = Greedy(8);
                o.Constraint = b.C;
                var e = Assert.Throws<ZerfooException>(() => s.Generate(Prompt, o), b.C.ToString());
                Assert.AreEqual(Status.InvalidArgument, e.Status, e.Message);
                StringAssert.Contains(b.Message, e.Message);
                Assert.AreEqual(0, s.TokensInContext, "nothing evaluated for " + b.C);
            }
            var e2 = Assert.Throws<ZerfooException>(() => model.CheckConstraint(b.C), b.C.ToString());
            Assert.AreEqual(Status.InvalidArgument, e2.Status, e2.Message);
            StringAssert.Contains(b.Message, e2.Message);
        }
        Assert.AreEqual(Status.InvalidArgument,
            Assert.Throws<ZerfooException>(() => model.CheckConstraint((ConstraintKind)99, "x")).Status);

        // The constraint covers one call: the next one on the session is free again.
        using (var s = model.CreateSession(new SessionOptions { ContextSize = 256 }))
        {
            var o = Greedy(4);
            o.Constraint = Constraint.Choice("x");
            Assert.AreEqual("x", s.Generate(Prompt, o).Text);
            Assert.That(s.Generate(" and", Greedy(8)).GeneratedTokens, Is.GreaterThan(0));
        }
    }

    [Test]
    public void ConstraintChoiceIsAJsonArray()
    {
        Assert.AreEqual("[\"a\",\"b \\\"c\\\" \\\\ \\n\\u0001\"]", Constraint.Choice("a", "b \"c\" \\ \n\u0001").Text);
        Assert.AreEqual("[]", Constraint.Choice().Text);
        Assert.AreEqual(ConstraintKind.Choice, Constraint.Choice("a").Kind);
    }

    // ------------------------------------------------------------------ logprobs

    [Test]
    public void LogprobsGreedyTopAndPerPiece()
    {
        using (var s = model.CreateSession(new SessionOptions { ContextSize = 256 }))
        {
            var o = Greedy(16);
            o.Logprobs = 5;
            var pieces = new List<Piece>();
            GenerateResult r = s.GeneratePieces(Prompt, o, pieces.Add);
            Assert.AreEqual(greedy32.Substring(0, r.Text.Length), r.Text);
            Assert.IsNotNull(r.Logprobs);
            Assert.AreEqual(r.GeneratedTokens, r.Logprobs.Length);
            foreach (TokenLogprobs lp in r.Logprobs)
            {
                Assert.AreEqual(5, lp.Top.Length);
                Assert.AreEqual(lp.Top[0].Token, lp.Token, "greedy picks the top alternative");
                Assert.AreEqual(lp.Top[0].Logprob, lp.Logprob);
                double mass = 0;
                for (int j = 0; j < lp.Top.Length; j++)
                {
                    if (j > 0) Assert.That(lp.Top[j].Logprob, Is.LessThanOrEqualTo(lp.Top[j - 1].Logprob));
                    mass += Math.Exp(lp.Top[j].Logprob);
                }
                Assert.That(mass, Is.LessThanOrEqualTo(1.0 + 1e-5));
            }
            var fromPieces = new List<TokenLogprobs>();
            foreach (Piece p in pieces)
            {
                Assert.That(p.Logprobs.Length, Is.GreaterThan(0));
                Assert.AreEqual(p.Token, p.Logprobs[p.Logprobs.Length - 1].Token, "a piece's token comes last");
                fromPieces.AddRange(p.Logprobs);
            }
            Assert.AreEqual(r.Logprobs.Select(x => x.Token).ToArray(), fromPieces.Select(x => x.Token).ToArray());
            Assert.AreEqual(r.Logprobs.Select(x => x.Logprob).ToArray(), fromPieces.Select(x => x.Logprob).ToArray());

            // The stream (a producer thread over the same callback) reports the same values.
            s.Reset();
            TextStream ts = s.Stream(Prompt, o);
            foreach (string piece in ts) { }
            Assert.AreEqual(r.Logprobs.Select(x => x.Logprob).ToArray(), ts.Result.Logprobs.Select(x => x.Logprob).ToArray());

            s.Reset();
            Assert.IsNull(s.Generate(Prompt, Greedy(4)).Logprobs, "off by default");
            foreach (int bad in new[] { -1, GenerateOptions.MaxLogprobs + 1 })
            {
                var b = Greedy(4);
                b.Logprobs = bad;
                var e = Assert.Throws<ZerfooException>(() => s.Generate(Prompt, b));
                Assert.AreEqual(Status.InvalidArgument, e.Status);
                StringAssert.Contains("n_logprobs", e.Message);
            }
        }
    }

    // ------------------------------------------------------------------ generation

    [Test]
    public void GreedyMatchesTheCCli()
    {
        var psi = new ProcessStartInfo(Env("ZERFOO_CLI"),
            "generate -m \"" + ModelPath + "\" -p \"" + Prompt + "\" -n 32 --temp 0 -t 1")
        {
            UseShellExecute = false, RedirectStandardOutput = true, RedirectStandardError = true,
            StandardOutputEncoding = Encoding.UTF8,
        };
        string cli;
        using (var p = Process.Start(psi))
        {
            cli = p.StandardOutput.ReadToEnd();
            p.WaitForExit();
            Assert.AreEqual(0, p.ExitCode, p.StandardError.ReadToEnd());
        }
        // The CLI streams the text, then ends the output on a fresh line.
        string expected = greedy32.EndsWith("\n") ? greedy32 : greedy32 + "\n";
        Assert.That(greedy32.Length, Is.GreaterThan(20));
        Assert.AreEqual(expected, cli);
    }

    [Test]
    public void GenerateReportsCountsAndTimings()
    {
        using (var s = model.CreateSession())
        {
            var r = s.Generate(Prompt, Greedy(16));
            Assert.AreEqual(StopReason.MaxTokens, r.StopReason);
            Assert.AreEqual(16, r.GeneratedTokens);
            Assert.AreEqual(model.Tokenize(Prompt).Length, r.PromptTokens);
            Assert.AreEqual(r.Text, model.Detokenize(r.Tokens));
            Assert.That(r.DecodeTime, Is.GreaterThan(TimeSpan.Zero));
            Assert.That(r.PromptTime, Is.GreaterThan(TimeSpan.Zero));
            Assert.That(r.TokensPerSecond, Is.GreaterThan(0));
            Assert.AreEqual(r.PromptTokens + r.GeneratedTokens - 1, s.TokensInContext);
            Assert.That(greedy32.StartsWith(r.Text), "16 greedy tokens are a prefix of 32: " + r.Text);
        }
    }

    [Test]
    public void StreamedPiecesConcatenateToTheText()
    {
        using (var s = model.CreateSession())
        {
            var pieces = new List<string>();
            var stream = s.Stream(Prompt, Greedy(32));
            foreach (string p in stream) pieces.Add(p);
            Assert.That(pieces.Count, Is.GreaterThan(10));
            Assert.AreEqual(greedy32, string.Concat(pieces));
            Assert.AreEqual(greedy32, stream.Result.Text);
            Assert.AreEqual(StopReason.MaxTokens, stream.Result.StopReason);
            Assert.AreEqual(32, stream.Result.GeneratedTokens);
        }
    }

    [Test]
    public void GenerateCallbackSeesEveryPiece()
    {
        using (var s = model.CreateSession())
        {
            var sb = new StringBuilder();
            var r = s.Generate(Prompt, Greedy(32), piece => sb.Append(piece));
            Assert.AreEqual(greedy32, sb.ToString());
            Assert.AreEqual(greedy32, r.Text);
        }
    }

    [Test]
    public void ConversationContinuesUntilReset()
    {
        using (var s = model.CreateSession())
        {
            var a = s.Generate(Prompt, Greedy(8));
            int past = s.TokensInContext;
            s.Generate(" And", Greedy(4));
            Assert.That(s.TokensInContext, Is.GreaterThan(past));
            s.Reset();
            Assert.AreEqual(0, s.TokensInContext);
            Assert.AreEqual(a.Text, s.Generate(Prompt, Greedy(8)).Text);
        }
    }

    [Test]
    public void StopStringEndsTheGeneration()
    {
        int cut = greedy32.IndexOf("United", StringComparison.Ordinal);
        Assume.That(cut > 0, "the reference text contains the stop string");
        using (var s = model.CreateSession())
        {
            var o = Greedy(32);
            o.Stop = new[] { "United" };
            var r = s.Generate(Prompt, o);
            Assert.AreEqual(StopReason.StopString, r.StopReason);
            Assert.AreEqual(greedy32.Substring(0, cut), r.Text);
        }
    }

    [Test]
    public void CancellationTokenStopsWithinOneToken()
    {
        using (var s = model.CreateSession())
        using (var cts = new CancellationTokenSource())
        {
            var stream = s.Stream(Prompt, Greedy(64), cts.Token);
            int seen = 0;
            Assert.Throws<OperationCanceledException>(() =>
            {
                foreach (string p in stream)
                {
                    if (++seen == 3) cts.Cancel();
                }
            });
            Assert.AreEqual(3, seen, "no piece after the cancel");
            var r = stream.Result;
            Assert.That(r.StopReason == StopReason.Cancelled || r.StopReason == StopReason.Callback,
                        r.StopReason.ToString());
            Assert.That(stream.ProducedAtStop, Is.GreaterThanOrEqualTo(3));
            Assert.That(r.Tokens.Length, Is.LessThanOrEqualTo(stream.ProducedAtStop + 1),
                        "pieces produced after the cancel request");
            Assert.That(r.GeneratedTokens, Is.LessThan(64));
            // The session is free and no cancel is left pending for the next call.
            s.Reset();
            Assert.AreEqual(greedy32, s.Generate(Prompt, Greedy(32)).Text);
        }
    }

    [Test]
    public void CancellationTokenStopsGenerate()
    {
        using (var s = model.CreateSession())
        using (var cts = new CancellationTokenSource())
        {
            int pieces = 0;
            Assert.Throws<OperationCanceledException>(() =>
                s.Generate(Prompt, Greedy(64), p => { if (++pieces == 2) cts.Cancel(); }, cts.Token));
            Assert.That(pieces, Is.InRange(2, 3), "stops at the next token boundary");
            s.Reset();
            Assert.AreEqual(greedy32, s.Generate(Prompt, Greedy(32)).Text);
        }
    }

    [Test]
    public void CancelFromAnotherThreadStopsGenerate()
    {
        using (var s = model.CreateSession(new SessionOptions { ContextSize = 1024 }))
        using (var first = new ManualResetEventSlim(false))
        {
            int piecesAtCancel = -1, pieces = 0;
            GenerateResult r = null;
            var t = new Thread(() => r = s.Generate(Prompt, Greedy(500), p =>
            {
                Interlocked.Increment(ref pieces);
                first.Set();
            }));
            t.Start();
            Assert.IsTrue(first.Wait(60000), "a first piece");
            s.Cancel();  // safe from any thread while the session is busy elsewhere
            piecesAtCancel = Volatile.Read(ref pieces);
            t.Join();
            Assert.AreEqual(StopReason.Cancelled, r.StopReason);
            Assert.That(r.GeneratedTokens, Is.LessThanOrEqualTo(piecesAtCancel + 2), "stops at the next token boundary");
            s.Reset();
            Assert.AreEqual(greedy32, s.Generate(Prompt, Greedy(32)).Text, "no cancel left for the next call");
        }
    }

    [Test]
    public void BreakOutOfTheStreamStopsTheGeneration()
    {
        using (var s = model.CreateSession())
        {
            var stream = s.Stream(Prompt, Greedy(200));
            var sb = new StringBuilder();
            foreach (string p in stream)
            {
                sb.Append(p);
                if (sb.Length > 10) break;
            }
            Assert.That(greedy32.StartsWith(sb.ToString()));
            Assert.AreEqual(StopReason.Callback, stream.Result.StopReason);
            Assert.That(stream.Result.Tokens.Length, Is.LessThanOrEqualTo(stream.ProducedAtStop + 1));
            Assert.That(stream.Result.GeneratedTokens, Is.LessThan(200));
            // The session is usable at once: the break waited for the producer.
            s.Reset();
            Assert.AreEqual(greedy32, s.Generate(Prompt, Greedy(32)).Text);
        }
    }

    [Test]
    public void ExceptionInTheCallbackStopsAndPropagates()
    {
        using (var s = model.CreateSession())
        {
            int n = 0;
            var e = Assert.Throws<ApplicationException>(() =>
                s.Generate(Prompt, Greedy(64), p => { if (++n == 2) throw new ApplicationException("boom"); }));
            Assert.AreEqual("boom", e.Message);
            Assert.AreEqual(2, n);
        }
    }

    [Test]
    public void GarbageCollectionWhileStreaming()
    {
        using (var s = model.CreateSession())
        {
            bool running = true;
            var gc = new Thread(() =>
            {
                while (Volatile.Read(ref running))
                {
                    GC.Collect();
                    GC.WaitForPendingFinalizers();
                }
            });
            gc.Start();
            try
            {
                for (int round = 0; round < 3; round++)
                {
                    s.Reset();
                    var sb = new StringBuilder();
                    foreach (string p in s.Stream(Prompt, Greedy(32)))
                    {
                        sb.Append(p);
                        GC.Collect();
                        GC.WaitForPendingFinalizers();
                    }
                    Assert.AreEqual(greedy32, sb.ToString(), "round " + round);
                }
            }
            finally
            {
                running = false;
                gc.Join();
            }
        }
    }

    // ------------------------------------------------------------------ lifetimes

    static void Collect()
    {
        for (int i = 0; i < 3; i++)
        {
            GC.Collect();
            GC.WaitForPendingFinalizers();
        }
    }

    [Test]
    public void DisposingTheModelFirstKeepsSessionsWorking()
    {
        Collect();
        int models = ModelHandle.LiveCount, sessions = SessionHandle.LiveCount;
        var m = Model.Load(ModelPath);
        var a = m.CreateSession();
        var b = m.CreateSession();
        m.Dispose();
        Assert.Throws<ObjectDisposedException>(() => m.CreateSession());
        Assert.AreEqual(models + 1, ModelHandle.LiveCount, "the sessions keep the native model");
        Assert.AreEqual(greedy32, a.Generate(Prompt, Greedy(32)).Text);
        a.Dispose();
        Assert.AreEqual(models + 1, ModelHandle.LiveCount);
        Assert.AreEqual(greedy32, b.Generate(Prompt, Greedy(32)).Text);
        b.Dispose();
        Assert.AreEqual(models, ModelHandle.LiveCount, "freed with its last session");
        Assert.AreEqual(sessions, SessionHandle.LiveCount);
        a.Dispose();  // idempotent
        m.Dispose();
    }

    [Test]
    public void DisposingSessionsFirstThenTheModel()
    {
        Collect();
        int models = ModelHandle.LiveCount;
        var m = Model.Load(ModelPath);
        var a = m.CreateSession();
        a.Dispose();
        Assert.Throws<ObjectDisposedException>(() => a.Generate(Prompt, Greedy(4)));
        Assert.AreEqual(models + 1, ModelHandle.LiveCount);
        m.Dispose();
        Assert.AreEqual(models, ModelHandle.LiveCount);
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void LeakModelAndSessions(int sessions, bool generate)
    {
        var m = Model.Load(ModelPath);
        for (int i = 0; i < sessions; i++)
        {
            var s = m.CreateSession(new SessionOptions { ContextSize = 64 });
            if (generate) s.Generate(Prompt, Greedy(2));
        }
    }

    [Test]
    public void FinalizersFreeLeakedHandlesInAnyOrder()
    {
        Collect();
        int models = ModelHandle.LiveCount, sessions = SessionHandle.LiveCount;
        // The model and its sessions become garbage together: the GC finalizes them in an order
        // of its choosing, many times over, and nothing may crash or leak.
        // Leaked on a thread that then ends: no live stack can hold a stale reference.
        var t = new Thread(() => { for (int i = 0; i < 10; i++) LeakModelAndSessions(3, i % 3 == 0); });
        t.Start();
        t.Join();
        var deadline = DateTime.UtcNow.AddSeconds(10);
        do Collect(); while ((ModelHandle.LiveCount != models || SessionHandle.LiveCount != sessions) &&
                             DateTime.UtcNow < deadline);
        Assert.AreEqual(models, ModelHandle.LiveCount, "leaked models freed");
        Assert.AreEqual(sessions, SessionHandle.LiveCount, "leaked sessions freed");
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static TextStream StartAndAbandonStream(Session s)
    {
        var stream = s.Stream(Prompt, Greedy(500));
        var e = stream.GetEnumerator();
        Assert.IsTrue(e.MoveNext());  // started, then dropped without Dispose
        return stream;
    }

    [Test]
    public void AnAbandonedStreamIsStoppedByTheFinalizer()
    {
        const int n = 3;
        var sessions = Enumerable.Range(0, n).Select(_ => model.CreateSession(new SessionOptions { ContextSize = 1024 })).ToArray();
        var streams = new TextStream[n];
        try
        {
            // Started on a thread that then ends, so no stale slot of a live stack keeps the
            // enumerators reachable. Mono's GC scans stacks conservatively (native frames
            // included), so a stale word somewhere can still keep one alive: three streams make
            // it very likely that at least one finalizer is observed.
            int before = Volatile.Read(ref TextStream.FinalizedEnumerators);
            var t = new Thread(() => { for (int i = 0; i < n; i++) streams[i] = StartAndAbandonStream(sessions[i]); });
            t.Start();
            t.Join();
            var deadline = DateTime.UtcNow.AddSeconds(10);
            while (Volatile.Read(ref TextStream.FinalizedEnumerators) - before < n && DateTime.UtcNow < deadline)
            {
                Collect();
                Thread.Sleep(10);
            }
            int finalized = Volatile.Read(ref TextStream.FinalizedEnumerators) - before;
            if (finalized == 0)
                Assert.Inconclusive("no abandoned enumerator was finalized (conservative GC kept them reachable)");
            deadline = DateTime.UtcNow.AddSeconds(30);
            while (streams.Count(x => x.Result != null) < finalized && DateTime.UtcNow < deadline) Thread.Sleep(10);
            var ended = Enumerable.Range(0, n).Where(i => streams[i].Result != null).ToList();
            Assert.AreEqual(finalized, ended.Count, "each finalized enumerator stopped its producer");
            foreach (int i in ended)
            {
                Assert.AreEqual(StopReason.Callback, streams[i].Result.StopReason);
                Assert.That(streams[i].Result.GeneratedTokens, Is.LessThan(500));
                sessions[i].Reset();  // the session is free again
                Assert.AreEqual(4, sessions[i].Generate(Prompt, Greedy(4)).GeneratedTokens);
            }
        }
        finally
        {
            foreach (TextStream x in streams) if (x != null) x.StopForTests();
            foreach (Session x in sessions) x.Dispose();
        }
    }

    // ------------------------------------------------------------------ threads

    [Test]
    public void SeveralThreadsShareOneModel()
    {
        const int n = 4;
        var texts = new string[n];
        var tokens = new int[n][];
        var errors = new Exception[n];
        var threads = Enumerable.Range(0, n).Select(i => new Thread(() =>
        {
            try
            {
                using (var s = model.CreateSession(new SessionOptions { ContextSize = 128, Threads = 1 }))
                {
                    for (int k = 0; k < 20; k++) tokens[i] = model.Tokenize(Prompt + " " + k);
                    texts[i] = s.Generate(Prompt, Greedy(32)).Text;
                }
            }
            catch (Exception e)
            {
                errors[i] = e;
            }
        })).ToList();
        threads.ForEach(t => t.Start());
        threads.ForEach(t => t.Join());
        for (int i = 0; i < n; i++)
        {
            Assert.IsNull(errors[i], "thread " + i + ": " + errors[i]);
            Assert.AreEqual(greedy32, texts[i], "thread " + i);
            CollectionAssert.AreEqual(model.Tokenize(Prompt + " 19"), tokens[i]);
        }
    }

    static readonly string[] BatchPrompts = {
        "The capital of France is", "Once upon a time", "def fibonacci(n):", "The three primary colors are",
        "In 1969, the first", "Water boils at", "A haiku about the sea:", "The quick brown fox",
    };

    [Test]
    public void MaxBatchGivesEachThreadItsOutputAlone()
    {
        int n = BatchPrompts.Length;
        var want = new string[n];
        for (int i = 0; i < n; i++)
            using (var s = model.CreateSession(new SessionOptions { ContextSize = 256, Threads = 1 }))
            {
                var r = s.Generate(BatchPrompts[i], Greedy(16));
                Assert.That(r.GeneratedTokens, Is.GreaterThan(0), BatchPrompts[i]);
                want[i] = r.Text;
            }
        var texts = new string[n];
        var pieces = new string[n];
        var errors = new Exception[n];
        using (var batched = Model.Load(ModelPath, new ModelOptions { MaxBatch = 8 }))
        using (var start = new Barrier(n))
        {
            var tasks = Enumerable.Range(0, n).Select(i => System.Threading.Tasks.Task.Factory.StartNew(() =>
            {
                bool started = false;
                try
                {
                    using (var s = batched.CreateSession(new SessionOptions { ContextSize = 256, Threads = 1 }))
                    {
                        started = true;
                        start.SignalAndWait();  // start together, so that the decode steps overlap
                        var sb = new StringBuilder();
                        texts[i] = s.Generate(BatchPrompts[i], Greedy(16), p => sb.Append(p)).Text;
                        pieces[i] = sb.ToString();
                    }
                }
                catch (Exception e)
                {
                    errors[i] = e;
                    if (!started) start.RemoveParticipant();
                }
            }, System.Threading.Tasks.TaskCreationOptions.LongRunning)).ToArray();
            System.Threading.Tasks.Task.WaitAll(tasks);
        }
        for (int i = 0; i < n; i++)
        {
            Assert.IsNull(errors[i], "task " + i + ": " + errors[i]);
            Assert.AreEqual(want[i], texts[i], "prompt " + i + " batched vs alone");
            Assert.AreEqual(want[i], pieces[i], "prompt " + i + ": its own callback's pieces");
        }
    }

    [Test]
    public void MaxBatchOutOfRangeThrowsInvalidArgument()
    {
        var e = Assert.Throws<ZerfooException>(() => Model.Load(ModelPath, new ModelOptions { MaxBatch = 65 }));
        Assert.AreEqual(Status.InvalidArgument, e.Status);
        StringAssert.Contains("max_batch", e.Message);
        StringAssert.Contains("65", e.Message);
    }

    [Test]
    public void ConcurrentUseOfOneSessionThrows()
    {
        using (var s = model.CreateSession())
        {
            using (var e = s.Stream(Prompt, Greedy(64)).GetEnumerator())
            {
                Assert.IsTrue(e.MoveNext());  // the stream owns the session now
                var err = Assert.Throws<InvalidOperationException>(() => s.Generate(Prompt, Greedy(4)));
                StringAssert.Contains("one thread at a time", err.Message);
                Exception other = null;
                var t = new Thread(() =>
                {
                    try { s.Reset(); } catch (Exception x) { other = x; }
                });
                t.Start();
                t.Join();
                Assert.IsInstanceOf<InvalidOperationException>(other);
                Assert.Throws<InvalidOperationException>(() => s.Stream(Prompt).GetEnumerator().MoveNext());
            }
            Assert.AreEqual(4, s.Generate(Prompt, Greedy(4)).GeneratedTokens, "free again after Dispose");
        }
    }

    // ------------------------------------------------------------------ errors

    [Test]
    public void BadPathThrowsIO()
    {
        var e = Assert.Throws<ZerfooException>(() => Model.Load("/nonexistent/dir/model.gguf"));
        Assert.AreEqual(Status.IO, e.Status);
        StringAssert.Contains("/nonexistent/dir/model.gguf", e.Message);
        Assert.AreEqual("ZF_ERR_IO", e.StatusName);
    }

    [Test]
    public void NonGgufFileThrowsFormat()
    {
        string path = Path.GetTempFileName();
        try
        {
            File.WriteAllText(path, "this is not a GGUF file, just some text that is long enough to read a header from");
            var e = Assert.Throws<ZerfooException>(() => Model.Load(path));
            Assert.AreEqual(Status.Format, e.Status);
            Assert.That(e.Message.Length, Is.GreaterThan("zf_model_load: ZF_ERR_FORMAT".Length), "library message");
        }
        finally
        {
            File.Delete(path);
        }
    }

    [Test]
    public void PromptLongerThanTheContextThrowsContextFull()
    {
        using (var s = model.CreateSession(new SessionOptions { ContextSize = 32 }))
        {
            string prompt = string.Join(" ", Enumerable.Repeat("The capital of France is Paris.", 20));
            var e = Assert.Throws<ZerfooException>(() => s.Generate(prompt, Greedy(4)));
            Assert.AreEqual(Status.ContextFull, e.Status);
            StringAssert.Contains("ZF_ERR_CONTEXT_FULL", e.Message);
            // The same failure through a stream surfaces from the loop.
            var e2 = Assert.Throws<ZerfooException>(() => { foreach (string p in s.Stream(prompt)) { } });
            Assert.AreEqual(Status.ContextFull, e2.Status);
            Assert.AreEqual(0, s.TokensInContext, "nothing was evaluated");
        }
    }

    [Test]
    public void OtherErrorsCarryTheirStatus()
    {
        var e = Assert.Throws<ZerfooException>(() => model.Detokenize(new[] { 1, model.Info.VocabSize + 5 }));
        Assert.AreEqual(Status.InvalidArgument, e.Status);
        e = Assert.Throws<ZerfooException>(() => model.Meta("no.such.key"));
        Assert.AreEqual(Status.NotFound, e.Status);
        using (var vocab = Model.Load(ModelPath, new ModelOptions { VocabOnly = true }))
        {
            e = Assert.Throws<ZerfooException>(() => vocab.CreateSession());
            Assert.AreEqual(Status.InvalidArgument, e.Status);
            CollectionAssert.AreEqual(model.Tokenize(Prompt), vocab.Tokenize(Prompt));
        }
        e = Assert.Throws<ZerfooException>(() =>
            Model.Load(ModelPath, new ModelOptions { Progress = p => p < 0.5f }));
        Assert.AreEqual(Status.Cancelled, e.Status);
    }

    // ------------------------------------------------------------------ model API

    [Test]
    public void InfoAndMetadata()
    {
        var i = model.Info;
        Assert.AreEqual("llama", i.Architecture);
        Assert.AreEqual(49152, i.VocabSize);
        Assert.AreEqual(30, i.Layers);
        Assert.AreEqual(Device.Cpu, i.Backend);
        Assert.AreEqual("llama", model.Meta("general.architecture"));
        Assert.AreEqual(i.ContextLengthTrain.ToString(), model.Meta("llama.context_length"));
        string v;
        Assert.IsFalse(model.TryGetMeta("no.such.key", out v));
        Assert.AreEqual(new FileInfo(ModelPath).Length, (long)i.FileSize);
    }

    [Test]
    public void FimTokens()
    {
        // SmolLM2 has no prefix/suffix/middle tokens; its "<reponame>" is a repository token.
        var f = model.Info.Fim;
        Assert.AreEqual(new[] { -1, -1, -1, -1, 4, -1 }, new[] { f.Pre, f.Suf, f.Mid, f.Pad, f.Rep, f.Sep });
        Assert.IsFalse(f.HasInfill);
        // scripts/fim_model.py's copy of SmolLM2 with FIM tokens (by key and by text).
        string script = Env("ZERFOO_FIM_SCRIPT");
        string output = Path.Combine(Path.GetTempPath(), "zerfoo-csharp-fim-" + System.Diagnostics.Process.GetCurrentProcess().Id + ".gguf");
        var psi = new System.Diagnostics.ProcessStartInfo("python3", "\"" + script + "\" \"" + ModelPath + "\" \"" + output + "\"")
        {
            UseShellExecute = false,
            RedirectStandardOutput = true,
        };
        using (var p = System.Diagnostics.Process.Start(psi))
        {
            p.StandardOutput.ReadToEnd();
            p.WaitForExit();
            Assert.AreEqual(0, p.ExitCode, script + " failed");
        }
        try
        {
            using (var m = Model.Load(output, new ModelOptions { VocabOnly = true }))
            {
                f = m.Info.Fim;
                Assert.AreEqual(new[] { 11, 12, 13, 14, 4, 5 }, new[] { f.Pre, f.Suf, f.Mid, f.Pad, f.Rep, f.Sep }, f.ToString());
                Assert.IsTrue(f.HasInfill);
            }
        }
        finally
        {
            File.Delete(output);
        }
    }

    [Test]
    public void TokenizeRoundTrips()
    {
        string text = "Grüße, 世界! Ünïcödé — and emoji 🙂.";
        int[] t = model.Tokenize(text);
        Assert.That(t.Length, Is.GreaterThan(5));
        Assert.AreEqual(text, model.Detokenize(t));
        // The span overload writes the same ids without allocating, and reports a short buffer.
        byte[] utf8 = Encoding.UTF8.GetBytes(text);
        var buf = new int[t.Length];
        Assert.AreEqual(t.Length, model.Tokenize(utf8, buf, TokenizeFlags.AddSpecial | TokenizeFlags.ParseSpecial));
        CollectionAssert.AreEqual(t, buf);
        Assert.AreEqual(t.Length, model.Tokenize(utf8, new int[2], TokenizeFlags.AddSpecial | TokenizeFlags.ParseSpecial));
        // Special-token text is one token only when parsed.
        Assert.AreEqual(1, model.Tokenize("<|im_end|>", TokenizeFlags.ParseSpecial).Length);
        Assert.That(model.Tokenize("<|im_end|>", TokenizeFlags.None).Length, Is.GreaterThan(1));
        var piece = new StringBuilder();
        foreach (int id in model.Tokenize("Hello world", TokenizeFlags.None))
            piece.Append(Encoding.UTF8.GetString(model.TokenToPiece(id)));
        Assert.AreEqual("Hello world", piece.ToString());
    }

    [Test]
    public void ChatTemplate()
    {
        string text = model.ApplyChatTemplate(new[]
        {
            ChatMessage.System("Be brief."),
            ChatMessage.User("Hi"),
        });
        Assert.AreEqual("<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n", text);
        string noPrefix = model.ApplyChatTemplate(new[] { ChatMessage.User("Hi") }, addAssistant: false);
        // SmolLM2's own template adds its default system turn when there is none (as jinja2 does).
        Assert.AreEqual("<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n" +
                        "<|im_start|>user\nHi<|im_end|>\n", noPrefix);
        using (var s = model.CreateSession())
        {
            var r = s.Generate(text, new GenerateOptions { Temperature = 0, MaxTokens = 64 });
            Assert.That(r.Text.Length, Is.GreaterThan(0));
        }
    }

    const string ParseTools = @"[{""type"": ""function"", ""function"": {""name"": ""get_weather"", ""description"": ""Weather"",
  ""parameters"": {""type"": ""object"", ""properties"": {""city"": {""type"": ""string""}, ""days"": {""type"": ""integer""}}}}},
  {""type"": ""function"", ""function"": {""name"": ""search"", ""parameters"": {""type"": ""object"", ""properties"": {""q"": {""type"": ""string""}}}}}]";

    static string TemplateFile(string stem)
    {
        return File.ReadAllText(Path.Combine(Env("ZERFOO_CHAT_TEMPLATES"), stem + ".jinja"), Encoding.UTF8);
    }

    /// <summary>JSON text without the whitespace outside strings (the library writes compact JSON).</summary>
    static string Compact(string json)
    {
        var sb = new StringBuilder();
        bool inString = false, escaped = false;
        foreach (char c in json)
        {
            if (inString)
            {
                sb.Append(c);
                if (escaped) escaped = false;
                else if (c == '\\') escaped = true;
                else if (c == '"') inString = false;
            }
            else if (!char.IsWhiteSpace(c))
            {
                inString = c == '"';
                sb.Append(c);
            }
        }
        return sb.ToString();
    }

    [Test]
    public void ChatParseToolCallsReasoningAndErrors()
    {
        var hermes = new ChatParseOptions { Template = TemplateFile("Qwen-Qwen2.5-7B-Instruct"), ToolsJson = ParseTools };
        // Only a call: Content is null, the arguments are JSON text.
        var msg = model.ChatParse("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 2}}\n</tool_call>", hermes);
        Assert.IsNull(msg.Content, msg.Json);
        Assert.IsNull(msg.ReasoningContent);
        Assert.AreEqual(1, msg.ToolCalls.Count, msg.Json);
        Assert.AreEqual("function", msg.ToolCalls[0].Type);
        Assert.AreEqual("get_weather", msg.ToolCalls[0].Function.Name);
        StringAssert.StartsWith("call_", msg.ToolCalls[0].Id);
        Assert.AreEqual("{\"city\":\"Paris\",\"days\":2}", Compact(msg.ToolCalls[0].Function.Arguments));
        StringAssert.StartsWith("{\"role\":\"assistant\",\"content\":null,", msg.Json);
        // Text then two calls (compact JSON, non-ASCII and astral characters).
        msg = model.ChatParse("I'll look.\n<tool_call>{\"name\":\"search\",\"arguments\":{\"q\":\"caf\u00e9 \U0001F600\"}}</tool_call>\n" +
                              "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>", hermes);
        Assert.AreEqual("I'll look.", msg.Content);
        Assert.AreEqual(new[] { "search", "get_weather" }, msg.ToolCalls.Select(c => c.Function.Name).ToArray());
        Assert.AreEqual("{\"q\":\"caf\u00e9 \U0001F600\"}", Compact(msg.ToolCalls[0].Function.Arguments));
        Assert.AreNotEqual(msg.ToolCalls[0].Id, msg.ToolCalls[1].Id);
        // Plain text longer than the first buffer: content only.
        string longText = string.Concat(Enumerable.Repeat("All work and no play. ", 40));
        msg = model.ChatParse(longText, hermes);
        Assert.AreEqual(longText, msg.Content);
        Assert.AreEqual(0, msg.ToolCalls.Count);
        // Reasoning with Qwen3's template.
        msg = model.ChatParse("<think>\nFirst, 2+2.\n</think>\n\nIt is 4.", new ChatParseOptions { Template = TemplateFile("Qwen-Qwen3-0.6B") });
        Assert.AreEqual("First, 2+2.", msg.ReasoningContent);
        Assert.AreEqual("It is 4.", msg.Content);
        // The model's own template, no options.
        msg = model.ChatParse("Hello there!");
        Assert.AreEqual("{\"role\":\"assistant\",\"content\":\"Hello there!\"}", msg.Json);
        // Errors.
        var e = Assert.Throws<ZerfooException>(() => model.ChatParse("x", new ChatParseOptions { ToolsJson = "[oops" }));
        Assert.AreEqual(Status.InvalidArgument, e.Status);
        StringAssert.Contains("tools_json", e.Message);
        e = Assert.Throws<ZerfooException>(() => model.ChatParse("x", new ChatParseOptions { ExtraJson = "[1]" }));
        Assert.AreEqual(Status.InvalidArgument, e.Status);
        StringAssert.Contains("extra_json", e.Message);
        e = Assert.Throws<ZerfooException>(() => model.ChatParse("x", new ChatParseOptions { TemplateName = "tool_use" }));
        Assert.AreEqual(Status.NotFound, e.Status);
        Assert.Throws<ArgumentNullException>(() => model.ChatParse(null));
    }

    [Test]
    public void MiniJsonReadsEscapesAndRejectsJunk()
    {
        var o = (Dictionary<string, object>)MiniJson.Parse("{\"a\": \"x\\\"y\\\\z\\u00e9\\ud83d\\ude00\\n\", \"b\": [1, -2.5e3, true, false, null], \"c\": {}}");
        Assert.AreEqual("x\"y\\z\u00e9\U0001F600\n", o["a"]);
        Assert.AreEqual(new object[] { 1.0, -2500.0, true, false, null }, ((List<object>)o["b"]).ToArray());
        foreach (string bad in new[] { "", "{", "[1,]", "{\"a\" 1}", "{} x", "\"\\q\"" })
            Assert.Throws<ZerfooException>(() => MiniJson.Parse(bad), bad);
    }

    [Test]
    public void EvalReturnsLogitsWhoseArgmaxIsTheGreedyToken()
    {
        using (var s = model.CreateSession())
        {
            float[] logits = s.Eval(model.Tokenize(Prompt));
            Assert.AreEqual(model.Info.VocabSize, logits.Length);
            int best = 0;
            for (int i = 1; i < logits.Length; i++) if (logits[i] > logits[best]) best = i;
            string first = model.Detokenize(new[] { best });
            Assert.That(greedy32.StartsWith(first), first);
            var e = Assert.Throws<ZerfooException>(() => s.Eval(new[] { 1 }.AsSpan(), new float[10]));
            Assert.AreEqual(Status.BufferTooSmall, e.Status);
        }
    }

    // ------------------------------------------------------------------ prefix cache

    /// <summary>A repeated sentence of about 200 tokens: three full 64-token cache blocks.</summary>
    static readonly string CachePrompt = string.Concat(Enumerable.Repeat("The quick brown fox jumps over the lazy dog. ", 20));

    static float[] LastLogits(Model m, int[] tokens, bool fastPrefill)
    {
        using (var s = m.CreateSession(new SessionOptions { ContextSize = 512, FastPrefill = fastPrefill }))
            return s.Eval(tokens);
    }

    static int Argmax(float[] v)
    {
        int best = 0;
        for (int i = 1; i < v.Length; i++) if (v[i] > v[best]) best = i;
        return best;
    }

    [Test]
    public void PrefixCacheOffReportsNoBlocks()
    {
        using (var off = Model.Load(ModelPath, new ModelOptions { Threads = 1, PrefixCacheMiB = -1 }))
        {
            LastLogits(off, off.Tokenize(CachePrompt), false);
            CacheInfo c = off.CacheInfo();
            Assert.AreEqual(0, c.BlockTokens, c.ToString());
            Assert.AreEqual(0UL, c.Blocks, c.ToString());
            Assert.AreEqual(0UL, c.HitTokens, c.ToString());
            off.Dispose();
            Assert.Throws<ObjectDisposedException>(() => off.CacheInfo());
        }
    }

    [Test]
    public void PrefixCacheGivesTheSameLogitsAndCountsHits()
    {
        using (var m = Model.Load(ModelPath, new ModelOptions { Threads = 1 }))
        {
            int[] tokens = m.Tokenize(CachePrompt);
            Assert.That(tokens.Length, Is.InRange(193, 256), "about 200 tokens");
            CacheInfo c0 = m.CacheInfo();
            Assert.AreEqual(64, c0.BlockTokens, c0.ToString());
            Assert.AreEqual(256UL << 20, c0.CapacityBytes, c0.ToString());
            Assert.AreEqual(0UL, c0.Blocks, c0.ToString());
            float[] first = LastLogits(m, tokens, false);
            float[] second = LastLogits(m, tokens, false);
            CacheInfo c = m.CacheInfo();
            Console.WriteLine(tokens.Length + " prompt tokens; after two sessions: " + c);
            // Bit for bit (NaN-safe): compare the float bits.
            Func<float[], int[]> bits = v => v.Select(x => BitConverter.ToInt32(BitConverter.GetBytes(x), 0)).ToArray();
            Assert.AreEqual(bits(first), bits(second), "logits differ with the cached prefix");
            Assert.That(c.HitTokens, Is.GreaterThanOrEqualTo(128UL), c.ToString());
            Assert.That(c.Blocks, Is.GreaterThanOrEqualTo(2UL), c.ToString());
            Assert.That(c.Bytes, Is.InRange(1UL, c.CapacityBytes), c.ToString());
            Assert.That(c.StoredBlocks, Is.GreaterThanOrEqualTo(c.Blocks), c.ToString());

            // A fast-prefill session works (the same greedy token) and neither reads nor fills the cache.
            float[] fast = LastLogits(m, tokens, true);
            CacheInfo after = m.CacheInfo();
            Assert.AreEqual(Argmax(first), Argmax(fast));
            Assert.AreEqual(c.HitTokens, after.HitTokens, after.ToString());
            Assert.AreEqual(c.StoredBlocks, after.StoredBlocks, after.ToString());
            // A live session reads the cached blocks in place (Linux: their pages mapped, not
            // copied); disposed sessions hold no mappings.
            Assert.AreEqual(0UL, c.MappedBlocks, c.ToString());
            using (var held = m.CreateSession(new SessionOptions { ContextSize = 512 }))
            {
                held.Eval(tokens);
                CacheInfo live = m.CacheInfo();
                if (Environment.OSVersion.Platform == PlatformID.Unix)
                    Assert.That(live.MappedBlocks, Is.GreaterThanOrEqualTo(2UL), live.ToString());
            }
            Assert.AreEqual(0UL, m.CacheInfo().MappedBlocks);
        }
    }

    [Test]
    public void PrefixCacheMiBOutOfRangeThrowsInvalidArgument()
    {
        foreach (int bad in new[] { -2, (1 << 20) + 1 })
        {
            var e = Assert.Throws<ZerfooException>(() => Model.Load(ModelPath, new ModelOptions { PrefixCacheMiB = bad }));
            Assert.AreEqual(Status.InvalidArgument, e.Status);
            StringAssert.Contains("prefix_cache_mib", e.Message);
        }
    }

    [Test]
    public void OptionsCannotSetReservedFields()
    {
        // The public option types expose no reserved field, and the structs that have them are
        // internal: the binding zeroes them through zf_*_params_init.
        foreach (Type t in new[] { typeof(ModelOptions), typeof(SessionOptions) })
        {
            var members = t.GetMembers(BindingFlags.Public | BindingFlags.Instance).Select(mi => mi.Name.ToLowerInvariant());
            Assert.IsFalse(members.Any(n => n.Contains("reserved")), t.Name);
        }
        foreach (string n in new[] { "zf_model_params", "zf_session_params", "zf_cache_info" })
        {
            Type t = typeof(Model).Assembly.GetType("Zerfoo." + n, true);
            Assert.IsFalse(t.IsPublic, n);
        }
        Assert.IsFalse(new SessionOptions().FastPrefill);
        Assert.IsNull(new ModelOptions().PrefixCacheMiB);
    }

    [Test]
    public void QuantizedKvSessionGenerates()
    {
        foreach (var o in new[] { new SessionOptions { ContextSize = 512, KvTypeK = KvType.Q8_0 },
                                  new SessionOptions { ContextSize = 512, KvTypeK = KvType.Q8_0, KvTypeV = KvType.Q4_0 } })
        {
            using (var s = model.CreateSession(o))
            {
                var r = s.Generate("The capital of France is", new GenerateOptions { Temperature = 0, MaxTokens = 8 });
                Assert.AreEqual(8, r.GeneratedTokens, o.KvTypeV.ToString());
                StringAssert.StartsWith(" Paris", r.Text);
            }
        }
    }

    [Test]
    public void LibraryVersionAndLogs()
    {
        Assert.AreEqual(Library.Version, string.Format("{0}.{1}.{2}", Library.VersionNumber / 1000000,
            Library.VersionNumber / 1000 % 1000, Library.VersionNumber % 1000));
        Assert.IsTrue(Library.BackendAvailable(Device.Cpu));
        var lines = new List<string>();
        Library.SetLogLevel(LogLevel.Debug);
        Library.SetLogCallback((level, msg) => { lock (lines) lines.Add(level + ": " + msg); });
        try
        {
            using (Model.Load(ModelPath, new ModelOptions { VocabOnly = true })) { }
        }
        finally
        {
            Library.SetLogCallback(null);
            Library.SetLogLevel(LogLevel.Warn);
        }
        Assert.That(lines.Count, Is.GreaterThan(0), "debug/info lines during a load");
    }

    // ------------------------------------------------------------------ library loading

    static string RunLoadCheck(string library, string ldLibraryPath = "")
    {
        string exe = Env("ZERFOO_LOADCHECK");
        var psi = new ProcessStartInfo("mono", "\"" + exe + "\"")
        {
            UseShellExecute = false, RedirectStandardOutput = true, RedirectStandardError = true,
        };
        psi.EnvironmentVariables["ZERFOO_LIBRARY"] = library;
        psi.EnvironmentVariables["LD_LIBRARY_PATH"] = ldLibraryPath;
        using (var p = Process.Start(psi))
        {
            string o = p.StandardOutput.ReadToEnd() + p.StandardError.ReadToEnd();
            p.WaitForExit();
            return o.Trim();
        }
    }

    [Test]
    public void MissingOrIncompatibleLibraryIsOneClearException()
    {
        string dir = Path.GetDirectoryName(Env("ZERFOO_LOADCHECK"));
        string ok = RunLoadCheck(Env("ZERFOO_LIBRARY"));
        StringAssert.StartsWith("loaded 0.", ok);
        string missing = RunLoadCheck("/nonexistent/libzerfoo.so.0");
        StringAssert.StartsWith("Zerfoo.ZerfooLibraryException IO: cannot load libzerfoo", missing);
        StringAssert.Contains("$ZERFOO_LIBRARY=/nonexistent/libzerfoo.so.0", missing);
        string old = RunLoadCheck(Path.Combine(dir, "fake-0.0/libzerfoo.so.0"));
        StringAssert.StartsWith("Zerfoo.ZerfooLibraryException Unsupported: libzerfoo 0.0.7 found", old);
        StringAssert.Contains("needs 0.x with x >= 7", old);
        string major = RunLoadCheck(Path.Combine(dir, "fake-1.5/libzerfoo.so.0"));
        StringAssert.StartsWith("Zerfoo.ZerfooLibraryException Unsupported: libzerfoo 1.5.0 found", major);
        string notZerfoo = RunLoadCheck(Path.Combine(dir, "fake-none/libzerfoo.so.0"));
        StringAssert.StartsWith("Zerfoo.ZerfooLibraryException Unsupported: the library found", notZerfoo);
        // Default loader (no $ZERFOO_LIBRARY, nothing on the path): names what it looked for.
        string none = RunLoadCheck("");
        StringAssert.Contains("libzerfoo.so.0", none);
        StringAssert.StartsWith("Zerfoo.ZerfooLibraryException IO:", none);
        // ... and finds libzerfoo.so.0 on LD_LIBRARY_PATH (Mono: through Zerfoo.dll.config).
        StringAssert.StartsWith("loaded 0.", RunLoadCheck("", Path.GetDirectoryName(Env("ZERFOO_LIBRARY"))));
    }

    // ------------------------------------------------------------------ embeddings, drafts

    static readonly string[] EmbedTexts = { "The cat sat on the mat.", "Paris is the capital of France.", "zerfoo" };

    static double Norm(float[] v)
    {
        double n = 0;
        foreach (float x in v) n += (double)x * x;
        return Math.Sqrt(n);
    }

    [Test]
    public void EmbedInvariants()
    {
        int dim = model.EmbedDimension();
        Assert.AreEqual(model.Info.EmbeddingSize, dim);
        float[][] batch = model.Embed(EmbedTexts);
        Assert.AreEqual(3, batch.Length);
        for (int i = 0; i < 3; i++)
        {
            Assert.AreEqual(dim, batch[i].Length);
            Assert.That(Math.Abs(Norm(batch[i]) - 1), Is.LessThanOrEqualTo(1e-5), "vector " + i);
            CollectionAssert.AreEqual(batch[i], model.Embed(new[] { EmbedTexts[i] })[0], "text " + i + " alone");
        }
        float[][] twice = model.Embed(new[] { EmbedTexts[0], EmbedTexts[0] });
        CollectionAssert.AreEqual(twice[0], twice[1]);
        CollectionAssert.AreEqual(batch[0], twice[0]);
        // Tokens as Embed tokenizes them give the same vector.
        int[] toks = model.Tokenize(EmbedTexts[1]);
        CollectionAssert.AreEqual(batch[1], model.EmbedTokens(new[] { toks })[0]);
        // Truncation: the first 16 values, renormalized.
        Assert.AreEqual(16, model.EmbedDimension(new EmbedOptions { Dimensions = 16 }));
        float[] shortV = model.Embed(new[] { EmbedTexts[0] }, new EmbedOptions { Dimensions = 16 })[0];
        float[] raw = model.Embed(new[] { EmbedTexts[0] }, new EmbedOptions { Dimensions = 16, NoNormalize = true })[0];
        Assert.AreEqual(16, shortV.Length);
        double n = Norm(raw);
        for (int i = 0; i < 16; i++) Assert.That(Math.Abs(shortV[i] - raw[i] / n), Is.LessThanOrEqualTo(1e-5));
    }

    [Test]
    public void EmbedErrors()
    {
        int dim = model.EmbedDimension();
        var e = Assert.Throws<ZerfooException>(() => model.Embed(new string[0]));
        Assert.AreEqual(Status.InvalidArgument, e.Status);
        e = Assert.Throws<ZerfooException>(() => model.Embed(EmbedTexts, new EmbedOptions { Dimensions = dim + 1 }));
        Assert.AreEqual(Status.InvalidArgument, e.Status);
        e = Assert.Throws<ZerfooException>(() => model.Embed(EmbedTexts, new EmbedOptions { Pooling = (Pooling)42 }));
        Assert.AreEqual(Status.InvalidArgument, e.Status);
        e = Assert.Throws<ZerfooException>(() => model.EmbedTokens(new[] { new[] { -1 } }));
        Assert.AreEqual(Status.InvalidArgument, e.Status);
        e = Assert.Throws<ZerfooException>(() => model.EmbedDimension(new EmbedOptions { Pooling = Pooling.None }));
        Assert.AreEqual(Status.Unsupported, e.Status);
    }

    [Test]
    public void RerankNeedsAClassificationHead()
    {
        var e = Assert.Throws<ZerfooException>(() => model.Rerank("what is a cat?", new[] { "a cat is an animal", "Paris" }));
        Assert.AreEqual(Status.Unsupported, e.Status, e.Message);
    }

    [Test]
    public void DraftsKeepTheOutput()
    {
        const string copy = "<|im_start|>user\nRepeat this text exactly: The quick brown fox jumps over the lazy dog. " +
            "The quick brown fox jumps over the lazy dog.<|im_end|>\n<|im_start|>assistant\n";
        GenerateResult plain, drafted;
        using (var s = model.CreateSession(new SessionOptions { ContextSize = 256 }))
            plain = s.Generate(copy, Greedy(40));
        Assert.AreEqual(0, plain.DraftedTokens);
        Assert.AreEqual(0, plain.AcceptedTokens);
        var o = Greedy(40);
        o.DraftMax = 8;
        o.DraftMin = 1;
        using (var s = model.CreateSession(new SessionOptions { ContextSize = 256 }))
            drafted = s.Generate(copy, o);
        Assert.AreEqual(plain.Text, drafted.Text);
        Assert.That(drafted.AcceptedTokens, Is.GreaterThan(0));
        Assert.That(drafted.DraftedTokens, Is.GreaterThanOrEqualTo(drafted.AcceptedTokens));
        var bad = Greedy(2);
        bad.DraftMax = GenerateOptions.MaxDraft + 1;
        using (var s = model.CreateSession(new SessionOptions { ContextSize = 256 }))
        {
            var e = Assert.Throws<ZerfooException>(() => s.Generate(copy, bad));
            Assert.AreEqual(Status.InvalidArgument, e.Status);
        }
    }

    [Test]
    public void DraftModelKeepsTheOutput()
    {
        const string prompt = "<|im_start|>user\nWrite two sentences about the sea.<|im_end|>\n<|im_start|>assistant\n";
        GenerateResult plain, drafted;
        using (var s = model.CreateSession(new SessionOptions { ContextSize = 256 }))
            plain = s.Generate(prompt, Greedy(32));
        var o = Greedy(32);
        o.DraftMax = 6;
        using (var s = model.CreateSession(new SessionOptions { ContextSize = 256 }))
        {
            s.SetDraftModel(model);  // the model as its own draft: the same vocabulary
            drafted = s.Generate(prompt, o);
            s.SetDraftModel(null);
        }
        Assert.AreEqual(plain.Text, drafted.Text);
        Assert.That(drafted.AcceptedTokens, Is.GreaterThan(0));
        Assert.That(drafted.DraftedTokens, Is.GreaterThanOrEqualTo(drafted.AcceptedTokens));
        string gemmaPath = System.IO.Path.Combine(Environment.GetEnvironmentVariable("HOME") ?? "",
                                                  ".cache/zerfoo/models/gemma-3-270m-q4_k_m.gguf");
        if (!System.IO.File.Exists(gemmaPath)) Assert.Ignore("Gemma 3 missing for the vocabulary check");
        using (var gemma = Model.Load(gemmaPath, new ModelOptions { Device = Device.Cpu }))
        using (var s = model.CreateSession(new SessionOptions { ContextSize = 256 }))
        {
            var e = Assert.Throws<ZerfooException>(() => s.SetDraftModel(gemma));
            Assert.AreEqual(Status.InvalidArgument, e.Status);
            StringAssert.Contains("vocabulary", e.Message);
        }
    }

    // ------------------------------------------------------------------ ABI drift

    static string Kind(Type t)
    {
        if (t == typeof(void)) return "void";
        if (t == typeof(int)) return "i32";
        if (t == typeof(uint)) return "u32";
        if (t == typeof(long)) return "i64";
        if (t == typeof(ulong)) return "u64";
        if (t == typeof(float)) return "f32";
        if (t == typeof(double)) return "f64";
        if (t == typeof(UIntPtr)) return "size";  // the binding's convention: UIntPtr is size_t
        if (t == typeof(IntPtr) || t.IsPointer || t.IsArray || t.IsByRef ||
            typeof(SafeHandle).IsAssignableFrom(t) || typeof(Delegate).IsAssignableFrom(t)) return "ptr";
        return "unknown:" + t.FullName;
    }

    [Test]
    public void EveryPInvokeMatchesTheHeader()
    {
        var fns = new Dictionary<string, string>();
        var cbs = new Dictionary<string, string>();
        var structs = new Dictionary<string, int[]>();  // size, nfields
        var fields = new List<string[]>();
        foreach (string line in File.ReadAllLines(Env("ZERFOO_ABI_TABLE")))
        {
            string[] w = line.Split(' ');
            if (w[0] == "fn") fns[w[1]] = string.Join(" ", w.Skip(2));
            else if (w[0] == "cb") cbs[w[1]] = string.Join(" ", w.Skip(2));
            else if (w[0] == "struct") structs[w[1]] = new[] { int.Parse(w[2]), int.Parse(w[3]) };
            else if (w[0] == "field") fields.Add(w);
        }
        Assert.That(fns.Count, Is.GreaterThan(20));
        Assembly asm = typeof(Model).Assembly;
        Type native = asm.GetType("Zerfoo.NativeMethods", true);
        var bound = new HashSet<string>();
        var problems = new List<string>();
        foreach (MethodInfo m in native.GetMethods(BindingFlags.Static | BindingFlags.NonPublic | BindingFlags.Public))
        {
            var dll = m.GetCustomAttributes(typeof(DllImportAttribute), false).Cast<DllImportAttribute>().FirstOrDefault();
            if (dll == null && (m.Attributes & MethodAttributes.PinvokeImpl) == 0) continue;
            string name = m.Name;
            bound.Add(name);
            string sig = string.Join(" ", new[] { Kind(m.ReturnType) }.Concat(m.GetParameters().Select(p => Kind(p.ParameterType))));
            string want;
            if (!fns.TryGetValue(name, out want)) problems.Add(name + ": not in zerfoo.h");
            else if (want != sig) problems.Add(name + ": header " + want + ", binding " + sig);
        }
        // Functions the header has and the binding does not use are allowed (the ABI is
        // append-only and a binding written for 0.1 works with 0.2), but reported.
        foreach (string f in fns.Keys)
            if (!bound.Contains(f)) Console.WriteLine("note: " + f + " is in zerfoo.h but the binding does not declare it");
        foreach (var cb in cbs)
        {
            Type d = asm.GetType("Zerfoo." + cb.Key);
            if (d == null) { problems.Add(cb.Key + ": no delegate type"); continue; }
            MethodInfo inv = d.GetMethod("Invoke");
            string sig = string.Join(" ", new[] { Kind(inv.ReturnType) }.Concat(inv.GetParameters().Select(p => Kind(p.ParameterType))));
            if (sig != cb.Value) problems.Add(cb.Key + ": header " + cb.Value + ", delegate " + sig);
            var ufp = (UnmanagedFunctionPointerAttribute)Attribute.GetCustomAttribute(d, typeof(UnmanagedFunctionPointerAttribute));
            if (ufp == null || ufp.CallingConvention != CallingConvention.Cdecl) problems.Add(cb.Key + ": not Cdecl");
        }
        foreach (var s in structs)
        {
            Type t = asm.GetType("Zerfoo." + s.Key);
            // A struct only newer functions use (appended after the binding was written) is
            // reported like those functions; one the binding declares must match exactly.
            if (t == null) { Console.WriteLine("note: " + s.Key + " is in zerfoo.h but the binding has no struct for it"); continue; }
            if (Marshal.SizeOf(t) != s.Value[0]) problems.Add(s.Key + ": size " + s.Value[0] + " in C, " + Marshal.SizeOf(t) + " in C#");
            int n = t.GetFields(BindingFlags.Instance | BindingFlags.Public | BindingFlags.NonPublic).Length;
            if (n != s.Value[1]) problems.Add(s.Key + ": " + s.Value[1] + " fields in C, " + n + " in C#");
        }
        foreach (string[] f in fields)
        {
            Type t = asm.GetType("Zerfoo." + f[1]);
            if (t == null) continue;
            FieldInfo fi = t.GetField(f[2], BindingFlags.Instance | BindingFlags.Public | BindingFlags.NonPublic);
            if (fi == null) { problems.Add(f[1] + "." + f[2] + ": missing in C#"); continue; }
            int off = (int)Marshal.OffsetOf(t, f[2]);
            int size = Marshal.SizeOf(fi.FieldType);
            if (off != int.Parse(f[3]) || size != int.Parse(f[4]))
                problems.Add(f[1] + "." + f[2] + ": C offset " + f[3] + " size " + f[4] + ", C# offset " + off + " size " + size);
        }
        Assert.IsEmpty(problems, string.Join("\n", problems));
        Assert.That(bound.Count, Is.GreaterThanOrEqualTo(25), "the v0.1 surface is declared");
    }
}

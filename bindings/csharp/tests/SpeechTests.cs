// Speech to text through the C# binding: Whisper tiny.en on jfk.wav gives whisper.cpp 1.8.5's
// segments (tests/data/golden/whisper/tiny.en-jfk.json), the callback sees them in order, and
// bad input is a ZerfooException naming the problem. ZERFOO_WHISPER_MODEL: set by test.sh.
using System;
using System.Collections.Generic;
using System.IO;
using System.Linq;
using System.Text.RegularExpressions;
using NUnit.Framework;
using Zerfoo;

[TestFixture]
public class SpeechTests
{
    static SpeechModel model;
    static float[] jfk;

    static string Golden(string name)
    {
        return Path.Combine(Path.GetDirectoryName(Environment.GetEnvironmentVariable("ZERFOO_SPEECH_GOLDEN_DIR") + "/"), name);
    }

    [TestFixtureSetUp]
    public void Load()
    {
        string path = Environment.GetEnvironmentVariable("ZERFOO_WHISPER_MODEL");
        if (string.IsNullOrEmpty(path)) Assert.Fail("test.sh sets $ZERFOO_WHISPER_MODEL");
        model = SpeechModel.Load(path);
        jfk = SpeechModel.DecodeWav(File.ReadAllBytes(Golden("jfk.wav")));
    }

    [TestFixtureTearDown]
    public void Free() { if (model != null) model.Dispose(); }

    [Test]
    public void TinyEnMatchesWhisperCpp()
    {
        SpeechInfo info = model.Info();
        Assert.AreEqual(51864, info.VocabSize);
        Assert.AreEqual(80, info.MelCount);
        Assert.IsFalse(info.Multilingual);
        Assert.AreEqual(176000, jfk.Length);
        string json = File.ReadAllText(Golden("tiny.en-jfk.json"));
        string greedy = json.Substring(json.IndexOf("\"greedy\""));
        greedy = greedy.Substring(0, greedy.IndexOf("\"greedy_jfk_x3\""));
        var want = Regex.Matches(greedy, "\\{\"t0\": (\\d+), \"t1\": (\\d+), \"text\": \"([^\"]*)\", \"tokens\": \\[([0-9,]*)\\]\\}")
                        .Cast<Match>().ToList();
        Assert.AreEqual(2, want.Count);
        var seen = new List<Segment>();
        Transcription t = model.Transcribe(jfk, new TranscribeOptions { Threads = 2 }, s => { seen.Add(s); return true; });
        Assert.AreEqual(want.Count, t.Segments.Length);
        Assert.AreEqual(want.Count, seen.Count);
        string text = "";
        for (int i = 0; i < want.Count; ++i)
        {
            Segment s = t.Segments[i];
            Assert.AreEqual(long.Parse(want[i].Groups[1].Value) * 10, s.StartMs);
            Assert.AreEqual(long.Parse(want[i].Groups[2].Value) * 10, s.EndMs);
            Assert.AreEqual(want[i].Groups[3].Value, s.Text);
            Assert.AreEqual(want[i].Groups[4].Value, string.Join(",", s.Tokens.Select(k => k.Id.ToString()).ToArray()));
            Assert.IsTrue(s.Tokens.All(k => k.P > 0 && k.P <= 1));
            Assert.AreEqual(s.Text, seen[i].Text);
            Assert.AreEqual(s.StartMs, seen[i].StartMs);
            text += s.Text;
        }
        Assert.AreEqual(text, t.Text);
        Assert.AreEqual("en", t.Language);
        Assert.AreEqual(t.Segments[0].Text, string.Concat(t.Segments[0].Tokens.Select(k => model.TokenText(k.Id)).ToArray()));
        // Stopping after the first segment keeps it.
        t = model.Transcribe(jfk, new TranscribeOptions { Threads = 2 }, s => false);
        Assert.AreEqual(1, t.Segments.Length);
    }

    [Test]
    public void ErrorsNamed()
    {
        float[] second = jfk.Take(16000).ToArray();
        var e = Assert.Throws<ZerfooException>(() => model.Transcribe(second, new TranscribeOptions { Language = "xx" }));
        Assert.AreEqual(Status.InvalidArgument, e.Status);
        StringAssert.Contains("language 'xx'", e.Message);
        e = Assert.Throws<ZerfooException>(() => model.Transcribe(second, new TranscribeOptions { Translate = true }));
        StringAssert.Contains("English-only", e.Message);
        e = Assert.Throws<ZerfooException>(() => model.Transcribe(new float[0]));
        Assert.AreEqual(Status.InvalidArgument, e.Status);
        e = Assert.Throws<ZerfooException>(() => SpeechModel.DecodeWav(System.Text.Encoding.ASCII.GetBytes("not a wav file at all")));
        StringAssert.Contains("not a WAV file", e.Message);
        e = Assert.Throws<ZerfooException>(() => SpeechModel.Load("/nonexistent/ggml-tiny.en.bin"));
        Assert.AreEqual(Status.IO, e.Status);
        // A callback that throws: transcription stops and the exception reaches the caller.
        Assert.Throws<InvalidOperationException>(() =>
            model.Transcribe(second, null, s => { throw new InvalidOperationException("from the callback"); }));
    }

    // Segments (t0, t1, text) of one run in the decoding golden, by its name.
    static List<Match> GoldenSegments(string json, string name)
    {
        string sec = json.Substring(json.IndexOf("\"" + name + "\": {"));
        sec = sec.Substring(0, sec.IndexOf("]}]}") + 4);  // the last segment, then the list
        return Regex.Matches(sec, "\\{\"t0\": (\\d+), \"t1\": (\\d+), \"text\": \"((?:[^\"\\\\]|\\\\.)*)\", \"tokens\": \\[[0-9,]*\\](, \"token_data\": \\[(.*?)\\]\\])?\\}")
                    .Cast<Match>().ToList();
    }

    static void Check(Transcription t, List<Match> want, string what)
    {
        Assert.AreEqual(want.Count, t.Segments.Length, what);
        for (int i = 0; i < want.Count; ++i)
        {
            Assert.AreEqual(long.Parse(want[i].Groups[1].Value) * 10, t.Segments[i].StartMs, what);
            Assert.AreEqual(long.Parse(want[i].Groups[2].Value) * 10, t.Segments[i].EndMs, what);
            Assert.AreEqual(want[i].Groups[3].Value.Replace("\\\"", "\""), t.Segments[i].Text, what);  // JSON's \" is "
        }
    }

    // The decoding options reach the library: a prompt, beam search and word timestamps give
    // whisper.cpp's results (tiny.en-jfk-decoding.json); a seed makes sampling reproducible.
    [Test]
    public void DecodingOptionsMatchWhisperCpp()
    {
        string json = File.ReadAllText(Golden("tiny.en-jfk-decoding.json"));
        string prompt = Regex.Match(json, "\"prompt\": \"([^\"]*)\"").Groups[1].Value;
        Check(model.Transcribe(jfk, new TranscribeOptions { Threads = 2, Prompt = prompt }), GoldenSegments(json, "greedy_prompt"), "prompt");
        Check(model.Transcribe(jfk, new TranscribeOptions { Threads = 2, BeamSize = 5 }), GoldenSegments(json, "beam5"), "beam 5");
        var want = GoldenSegments(json, "greedy_token_timestamps");
        Transcription t = model.Transcribe(jfk, new TranscribeOptions { Threads = 2, WordTimestamps = true });
        Check(t, want, "word timestamps");
        for (int i = 0; i < want.Count; ++i)
        {
            var data = Regex.Matches(want[i].Groups[5].Value, "\\[(-?[0-9.e+-]+),(-?[0-9.e+-]+),(-?[0-9.e+-]+),(-?[0-9.e+-]+),(-?[0-9.e+-]+),(-?\\d+),(-?\\d+)").Cast<Match>().ToList();
            Segment s = t.Segments[i];
            Assert.AreEqual(data.Count, s.Tokens.Length);
            for (int k = 0; k < data.Count; ++k)
            {
                Assert.AreEqual(long.Parse(data[k].Groups[6].Value) * 10, s.Tokens[k].StartMs, "token " + k);
                Assert.AreEqual(long.Parse(data[k].Groups[7].Value) * 10, s.Tokens[k].EndMs, "token " + k);
            }
            Assert.AreEqual(s.Text, string.Concat(s.Words.Select(w => w.Text).ToArray()));
            Assert.IsTrue(s.Words.All(w => w.Text.StartsWith(" ") && w.StartMs <= w.EndMs));
        }
        var sampled = new TranscribeOptions { Threads = 2, Temperature = 1, TemperatureInc = 0, Seed = 42 };
        Transcription a = model.Transcribe(jfk, sampled), b = model.Transcribe(jfk, sampled);
        Assert.IsNotEmpty(a.Text);
        Assert.AreEqual(a.Text, b.Text);
        Assert.AreEqual(1.0f, a.Segments[0].Temperature);
        var e = Assert.Throws<ZerfooException>(() => model.Transcribe(jfk.Take(16000).ToArray(), new TranscribeOptions { BeamSize = 9 }));
        Assert.AreEqual(Status.InvalidArgument, e.Status);
        StringAssert.Contains("params->beam_size", e.Message);
    }
}

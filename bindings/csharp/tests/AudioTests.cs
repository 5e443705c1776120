// Audio through the C# binding (issue #46) on SmolLM2-135M with tests/vision's synthesized
// ultravox projector and the first 4 s of the sdist's test-2.mp3 (tests/data/audio/test-2-4s.wav).
// Random projector weights make the text noise, so the checks are the rows, the positions the clip
// takes, that the same greedy request answers the same twice, and the errors.
// ZERFOO_VISION_MODELS (test.sh runs tests/vision/make_audio_models.sh into its audio/ folder),
// ZERFOO_TEST_MODEL and ZERFOO_GEMMA3_MODEL: set by test.sh.
using System;
using System.IO;
using System.Linq;
using System.Threading.Tasks;
using NUnit.Framework;
using Zerfoo;

[TestFixture]
public class AudioTests
{
    static string Env(string name) { return VisionTests.Env(name); }

    static string UltravoxPath() { return Path.Combine(Env("ZERFOO_VISION_MODELS"), "audio", "mmproj-ultravox-f16.gguf"); }

    static byte[] ClipWav() { return File.ReadAllBytes(Env("ZERFOO_AUDIO_CLIP")); }

    static GenerateOptions Greedy(int n) { return new GenerateOptions { Temperature = 0, MaxTokens = n, Seed = 1 }; }

    static Session NewSession(Model model) { return model.CreateSession(new SessionOptions { ContextSize = 1024, Threads = 1 }); }

    // SmolLM2 (vocabOnly: tokenizer and widths only), the ultravox projector, the clip's WAV and samples.
    static void WithUltravox(bool vocabOnly, Action<Model, Mmproj, byte[], float[]> body)
    {
        using (Model model = Model.Load(Env("ZERFOO_TEST_MODEL"), new ModelOptions { VocabOnly = vocabOnly }))
        using (Mmproj p = Mmproj.Load(model, UltravoxPath()))
        {
            byte[] wav = ClipWav();
            body(model, p, wav, SpeechModel.DecodeWav(wav));
        }
    }

    static void Fails(Action a, Status status, string phrase) { VisionTests.Fails(a, status, phrase); }

    [Test]
    public void EmbedsAudio()
    {
        WithUltravox(true, (model, p, wav, pcm) =>
        {
            MmprojInfo info = p.Info;
            Assert.AreEqual("ultravox", info.ProjectorType);
            Assert.AreEqual(Modality.Audio, info.Modalities);
            Assert.AreEqual(Audio.SampleRate, info.SampleRate);
            AudioEmbedding rows = p.EmbedAudio(pcm, 2);
            // 4 s is one 30 s chunk: 375 rows of the model's width (ultravox as synthesized).
            Assert.AreEqual(375, rows.TokenCount);
            Assert.AreEqual(info.EmbeddingWidth, rows.Width);
            Assert.AreEqual(rows.TokenCount * rows.Width, rows.Data.Length);
            Assert.IsTrue(rows.Data.All(v => !float.IsNaN(v) && !float.IsInfinity(v)));
            for (int t = 0; t < rows.TokenCount; t++)
                Assert.IsTrue(Enumerable.Range(t * rows.Width, rows.Width).Any(i => rows.Data[i] != 0), "row " + t);
            // Two threads at once, one worker each: the same rows.
            var a = Task.Run(() => p.EmbedAudio(pcm, 1));
            var b = Task.Run(() => p.EmbedAudio(pcm, 1));
            CollectionAssert.AreEqual(rows.Data, a.Result.Data);
            CollectionAssert.AreEqual(rows.Data, b.Result.Data);
            // EncodeWav writes the samples exactly.
            CollectionAssert.AreEqual(pcm, SpeechModel.DecodeWav(Audio.EncodeWav(pcm)));
        });
    }

    [Test]
    public void ErrorsAreNamed()
    {
        WithUltravox(true, (model, p, wav, pcm) =>
        {
            float[] nan = (float[])pcm.Clone();
            nan[1234] = float.NaN;
            Fails(() => p.EmbedAudio(new float[0]), Status.InvalidArgument, "at least 160");
            Fails(() => p.EmbedAudio(pcm.Take(159).ToArray()), Status.InvalidArgument, "at least 160");
            Fails(() => p.EmbedAudio(nan), Status.InvalidArgument, "pcm[1234] is NaN");
            Fails(() => p.EmbedAudio(pcm, -1), Status.InvalidArgument, "n_threads");
            Fails(() => p.EmbedRgb(new byte[12], 2, 2), Status.InvalidArgument, "encodes audio, not images");
        });
        // Audio to Gemma 3's vision projector.
        using (Model gemma = Model.Load(Env("ZERFOO_GEMMA3_MODEL"), new ModelOptions { VocabOnly = true }))
        using (Mmproj vision = Mmproj.Load(gemma, Path.Combine(Env("ZERFOO_VISION_MODELS"), "mmproj-gemma3-f16.gguf")))
        {
            Assert.AreEqual(Modality.Image, vision.Info.Modalities);
            Assert.AreEqual(0, vision.Info.SampleRate);
            Fails(() => vision.EmbedAudio(new float[16000]), Status.InvalidArgument, "encodes images, not audio");
        }
    }

    [Test]
    public void EvalAudioThenGenerate()
    {
        WithUltravox(false, (model, p, wav, pcm) =>
        {
            Func<string> answer = () =>
            {
                using (Session s = NewSession(model))
                {
                    Assert.AreEqual(model.Info.VocabSize, s.EvalAudio(p, pcm).Length);
                    GenerateResult g = s.Generate("Transcript:", Greedy(8));  // continues after the clip
                    Assert.Greater(g.Tokens.Length, 0);
                    return g.Text;
                }
            };
            Assert.AreEqual(answer(), answer(), "the same greedy generation after the clip twice");
            float[] fresh;
            using (Session s = NewSession(model)) fresh = s.EvalAudio(p, pcm);
            using (Session s = NewSession(model))
            {
                float[] inf = (float[])pcm.Clone();
                inf[7] = float.PositiveInfinity;
                Fails(() => s.EvalAudio(p, inf), Status.InvalidArgument, "pcm[7] is infinite");
                Fails(() => s.EvalAudio(p, new float[0]), Status.InvalidArgument, "at least 160");
                // Nothing was appended: the clip then reads as in a fresh session.
                CollectionAssert.AreEqual(fresh, s.EvalAudio(p, pcm));
            }
        });
    }

    [Test]
    public void ChatTurnWithAudio()
    {
        WithUltravox(false, (model, p, wav, pcm) =>
        {
            Func<ChatRequestMessage, Mmproj, ChatTurnResult> turn = (m, mm) =>
            {
                using (Session s = NewSession(model))
                    return s.ChatTurn(new ChatRequest { Messages = { m }, Generate = Greedy(6), Mmproj = mm });
            };
            ChatTurnResult a = turn(ChatRequestMessage.UserWithAudio("What do you hear?", wav), p);
            // EncodeWav's bytes of the same samples are the same clip to the model.
            ChatTurnResult b = turn(ChatRequestMessage.UserWithAudio("What do you hear?", Audio.EncodeWav(pcm)), p);
            Assert.AreEqual(a.Message.Content, b.Message.Content, "the file's WAV and EncodeWav's");
            ChatTurnResult text = turn(ChatRequestMessage.User("What do you hear?"), p);
            Assert.GreaterOrEqual(a.Usage.PromptTokens, 375);
            Assert.GreaterOrEqual(a.Usage.PromptTokens, text.Usage.PromptTokens + 375, "the clip's 375 positions");
            Fails(() => turn(ChatRequestMessage.UserWithAudio("Hi", wav), null), Status.InvalidArgument,
                  "messages[0].content[0]");
            byte[] gif = { (byte)'G', (byte)'I', (byte)'F', (byte)'8', (byte)'9', (byte)'a', 1, 0, 1, 0, 0, 0, 0, (byte)';' };
            Fails(() => turn(ChatRequestMessage.UserWithImages("And this?", gif), p), Status.InvalidArgument,
                  "encodes audio, not images");
        });
    }
}

// Images through the C# binding on tests/vision's synthesized Gemma 3 projector bound to Gemma 3
// 270M: the projector's facts, RGB pixels = a BMP file of the same pixels, two threads agree, the
// projector outliving its model, errors named. ZERFOO_VISION_MODELS and ZERFOO_GEMMA3_MODEL: set
// by test.sh.
using System;
using System.IO;
using System.Linq;
using System.Threading.Tasks;
using NUnit.Framework;
using Zerfoo;

[TestFixture]
public class VisionTests
{
    internal static string Env(string name)
    {
        string v = Environment.GetEnvironmentVariable(name);
        if (string.IsNullOrEmpty(v)) Assert.Fail("test.sh sets $" + name);
        return v;
    }

    static Model Gemma3() { return Model.Load(Env("ZERFOO_GEMMA3_MODEL"), new ModelOptions { VocabOnly = true }); }

    static string MmprojPath() { return Path.Combine(Env("ZERFOO_VISION_MODELS"), "mmproj-gemma3-f16.gguf"); }

    // A w x h picture (gradients and a checker) as RGB bytes and as a 24-bit BMP file.
    static void Picture(int w, int h, out byte[] rgb, out byte[] bmp)
    {
        rgb = new byte[w * h * 3];
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++)
            {
                int i = (y * w + x) * 3;
                rgb[i] = (byte)(x * 255 / w);
                rgb[i + 1] = (byte)(y * 255 / h);
                rgb[i + 2] = (byte)((((x / 8) ^ (y / 8)) & 1) == 1 ? 200 : 0);
            }
        int row = (w * 3 + 3) / 4 * 4;
        var ms = new MemoryStream();
        var bw = new BinaryWriter(ms);
        bw.Write((byte)'B'); bw.Write((byte)'M');
        bw.Write(54 + row * h); bw.Write(0); bw.Write(54); bw.Write(40);
        bw.Write(w); bw.Write(h); bw.Write((short)1); bw.Write((short)24);
        bw.Write(0); bw.Write(row * h); bw.Write(2835); bw.Write(2835); bw.Write(0); bw.Write(0);
        for (int y = h - 1; y >= 0; y--)
        {
            for (int x = 0; x < w; x++)
            {
                int i = (y * w + x) * 3;
                bw.Write(rgb[i + 2]); bw.Write(rgb[i + 1]); bw.Write(rgb[i]);
            }
            for (int p = w * 3; p < row; p++) bw.Write((byte)0);
        }
        bw.Flush();
        bmp = ms.ToArray();
    }

    [Test]
    public void EmbedsImages()
    {
        Model model = Gemma3();
        using (Mmproj p = Mmproj.Load(model, MmprojPath()))
        {
            MmprojInfo info = p.Info;
            Assert.AreEqual("gemma3", info.ProjectorType);
            Assert.AreEqual(896, info.ImageSize);
            Assert.AreEqual(14, info.PatchSize);
            Assert.AreEqual(256, info.TokenCount);
            Assert.AreEqual(640, info.EmbeddingWidth);
            Assert.AreEqual(64, info.VisionWidth);
            Assert.AreEqual(2, info.Layers);
            byte[] rgb, bmp;
            Picture(100, 60, out rgb, out bmp);
            ImageEmbedding fromBmp = p.EmbedImage(bmp, 2);
            Assert.AreEqual(256, fromBmp.TokenCount);
            Assert.AreEqual(640, fromBmp.Width);
            Assert.AreEqual(256 * 640, fromBmp.Data.Length);
            Assert.IsTrue(fromBmp.Data.All(v => !float.IsNaN(v) && !float.IsInfinity(v)));
            Assert.IsTrue(fromBmp.Data.Any(v => v != 0));
            // The projector keeps its model: disposing the model first leaves it usable.
            model.Dispose();
            ImageEmbedding fromRgb = p.EmbedRgb(rgb, 100, 60, 2);
            CollectionAssert.AreEqual(fromBmp.Data, fromRgb.Data, "RGB pixels and the BMP of the same pixels");
            // Shared by two threads at once.
            var a = Task.Run(() => p.EmbedImage(bmp, 1));
            var b = Task.Run(() => p.EmbedRgb(rgb, 100, 60, 1));
            CollectionAssert.AreEqual(a.Result.Data, b.Result.Data);
        }
    }

    internal static void Fails(Action a, Status status, string phrase)
    {
        var e = Assert.Throws<ZerfooException>(() => a());
        Assert.AreEqual(status, e.Status, e.Message);
        StringAssert.Contains(phrase, e.Message);
    }

    [Test]
    public void ErrorsAreNamed()
    {
        using (Model model = Gemma3())
        using (Mmproj p = Mmproj.Load(model, MmprojPath()))
        {
            byte[] rgb, bmp;
            Picture(16, 16, out rgb, out bmp);
            var webp = new byte[64];
            System.Text.Encoding.ASCII.GetBytes("RIFF\u0024\0\0\0WEBPVP8 ").CopyTo(webp, 0);
            Fails(() => p.EmbedImage(webp), Status.InvalidArgument, "WebP");
            Fails(() => p.EmbedImage(bmp.Take(40).ToArray()), Status.Format, "image:");
            Fails(() => p.EmbedImage(new byte[0]), Status.InvalidArgument, "image->data is NULL");
            Fails(() => p.EmbedRgb(rgb, 16, 17), Status.InvalidArgument, "width * height * 3");
            Fails(() => p.EmbedRgb(rgb, 10000, 10000), Status.InvalidArgument, "exceed the budget");
            Fails(() => p.EmbedImage(bmp, -1), Status.InvalidArgument, "n_threads");
            Fails(() => Mmproj.Load(model, "/nonexistent/mmproj.gguf"), Status.IO, "/nonexistent/mmproj.gguf");
            // A projector of another model: SmolLM2 is 576 wide and a llama.
            using (Model smol = Model.Load(Env("ZERFOO_TEST_MODEL"), new ModelOptions { VocabOnly = true }))
            {
                Fails(() => Mmproj.Load(smol, MmprojPath()), Status.InvalidArgument, "embedding width 576");
                Fails(() => Mmproj.Load(smol, MmprojPath()), Status.InvalidArgument, "the model is 'llama'");
            }
        }
    }

    // ---- Images in the prompt (issue #46 §2): a chat turn with an image, the raw-prompt route.

    static GenerateOptions Greedy(int n) { return new GenerateOptions { Temperature = 0, MaxTokens = n, Seed = 1 }; }

    static ChatTurnResult Turn(Model model, ChatRequest req)
    {
        using (var s = model.CreateSession(new SessionOptions { ContextSize = 1024, Threads = 1 }))
            return s.ChatTurn(req);
    }

    // Gemma 3 270M (fully loaded), its projector and a 64 x 48 BMP.
    static void WithGemma3(Action<Model, Mmproj, byte[]> body)
    {
        using (Model model = Model.Load(Env("ZERFOO_GEMMA3_MODEL")))
        using (Mmproj p = Mmproj.Load(model, MmprojPath()))
        {
            byte[] rgb, bmp;
            Picture(64, 48, out rgb, out bmp);
            body(model, p, bmp);
        }
    }

    [Test]
    public void ChatTurnWithImage()
    {
        WithGemma3((model, p, bmp) =>
        {
            Func<ChatRequest> withImage = () => new ChatRequest
            {
                Messages = { ChatRequestMessage.UserWithImages("What is this?", bmp) },
                Generate = Greedy(6),
                Mmproj = p,
            };
            ChatTurnResult a = Turn(model, withImage()), b = Turn(model, withImage());
            Assert.AreEqual(a.Message.Content, b.Message.Content, "the same greedy turn twice");
            ChatTurnResult text = Turn(model, new ChatRequest
            {
                Messages = { ChatRequestMessage.User("What is this?") }, Generate = Greedy(6), Mmproj = p,
            });
            Assert.GreaterOrEqual(a.Usage.PromptTokens, text.Usage.PromptTokens + 256, "the image's 256 positions");
            ChatRequest noMmproj = withImage();
            noMmproj.Mmproj = null;
            Fails(() => Turn(model, noMmproj), Status.InvalidArgument, "messages[0].content[0]");
        });
    }

    [Test]
    public void EvalImageAndEmbeddings()
    {
        WithGemma3((model, p, bmp) =>
        {
            using (var s = model.CreateSession(new SessionOptions { ContextSize = 1024, Threads = 1 }))
            {
                float[] logits = s.EvalImage(p, bmp);
                Assert.AreEqual(model.Info.VocabSize, logits.Length);
                GenerateResult g = s.Generate("Describe:", Greedy(4));  // continues after the image
                Assert.Greater(g.Tokens.Length, 0);
                Fails(() => s.EvalImage(p, System.Text.Encoding.ASCII.GetBytes("not an image")), Status.InvalidArgument,
                      "image");
            }
            ImageEmbedding e = p.EmbedImage(bmp, 1);
            using (var s = model.CreateSession(new SessionOptions { ContextSize = 1024, Threads = 1 }))
            {
                Assert.AreEqual(model.Info.VocabSize, s.EvalEmbeddings(e.Data, e.Width, true).Length);
                Fails(() => s.EvalEmbeddings(new float[3], 3, false), Status.InvalidArgument, "width");
                Assert.Throws<ArgumentException>(() => s.EvalEmbeddings(new float[5], 3, false));
            }
        });
    }
}

// LoRA adapters through the C# binding: load a random adapter (scripts/synth_lora.py, path in
// $ZERFOO_LORA_SCRIPT), apply it with a scale (the logits change), scale 0 and a cleared set give
// the base logits bit for bit, Dispose in any order, a misshaped adapter fails with the loader's
// message.
using System;
using System.Diagnostics;
using System.IO;
using NUnit.Framework;
using Zerfoo;

[TestFixture]
public class LoraTests
{
    static string Env(string name)
    {
        string v = Environment.GetEnvironmentVariable(name);
        if (string.IsNullOrEmpty(v)) Assert.Fail("test.sh sets $" + name);
        return v;
    }

    static string Synth(string name, string args)
    {
        string outPath = Path.Combine(Path.GetTempPath(), "zerfoo-cs-lora-" + Process.GetCurrentProcess().Id + "-" + name + ".gguf");
        var psi = new ProcessStartInfo("python3", "\"" + Env("ZERFOO_LORA_SCRIPT") + "\" \"" + Env("ZERFOO_TEST_MODEL") +
                                                  "\" \"" + outPath + "\" " + args)
        {
            UseShellExecute = false,
            RedirectStandardOutput = true,
        };
        using (Process p = Process.Start(psi))
        {
            p.StandardOutput.ReadToEnd();
            p.WaitForExit();
            Assert.AreEqual(0, p.ExitCode, "scripts/synth_lora.py failed");
        }
        return outPath;
    }

    static bool SameBits(float[] a, float[] b)
    {
        if (a.Length != b.Length) return false;
        for (int i = 0; i < a.Length; ++i)
            if (BitConverter.ToInt32(BitConverter.GetBytes(a[i]), 0) != BitConverter.ToInt32(BitConverter.GetBytes(b[i]), 0)) return false;
        return true;
    }

    [Test]
    public void LoadApplyClear()
    {
        string path = Synth("a", "--seed 1");
        using (Model m = Model.Load(Env("ZERFOO_TEST_MODEL"), new ModelOptions { Threads = 1 }))
        using (Session s = m.CreateSession(new SessionOptions { ContextSize = 256 }))
        {
            int[] tokens = m.Tokenize("The capital of France is");
            float[] baseLogits = s.Eval(tokens);
            LoraAdapter a = m.LoadLora(path);
            Assert.AreEqual(8, a.Info.Rank);
            Assert.AreEqual(16.0f, a.Info.Alpha);
            Assert.AreEqual(210, a.Info.WeightCount);

            s.Reset();
            s.SetLoras(new[] { a }, new[] { 1.0f });
            float[] adapted = s.Eval(tokens);
            Assert.IsFalse(SameBits(adapted, baseLogits), "the adapter at scale 1 changed nothing");

            s.Reset();
            s.SetLoras(new[] { a }, new[] { 0.0f });
            Assert.IsTrue(SameBits(s.Eval(tokens), baseLogits), "scale 0 is not the base model");

            s.Reset();
            s.SetLoras(new[] { a }, new[] { 1.0f });
            a.Dispose();  // applied: the session keeps it
            Assert.IsTrue(SameBits(s.Eval(tokens), adapted));
            Assert.Throws<ObjectDisposedException>(() => s.SetLoras(new[] { a }, new[] { 1.0f }));

            s.Reset();
            s.SetLoras(null, null);
            Assert.IsTrue(SameBits(s.Eval(tokens), baseLogits), "cleared is not the base model");
            Assert.Throws<ArgumentException>(() => s.SetLoras(new LoraAdapter[0], new[] { 1.0f }));

            string bad = Synth("bad", "--layers 0 --defect bad_shape");
            var e = Assert.Throws<ZerfooException>(() => m.LoadLora(bad));
            Assert.AreEqual(Status.InvalidArgument, e.Status);
            StringAssert.Contains("lora_b [9, ", e.Message);
            File.Delete(bad);
        }
        File.Delete(path);
    }
}

// Throughput through the C# binding, equivalent to
//   zerfoo generate -m MODEL -p PROMPT -n 128 --temp 0 --ignore-eos -t 2
// (one model load, one session, one generation through Session.Generate, or Session.Stream
// with a 5th argument "stream"; prints the library's own prefill/decode rates
// in the CLI's summary format). bench/compare.sh alternates it with the CLI.
using System;
using Zerfoo;

static class Bench
{
    static int Main(string[] args)
    {
        if (args.Length < 4)
        {
            Console.Error.WriteLine("usage: Bench.exe MODEL PROMPT N_TOKENS THREADS [stream]");
            return 2;
        }
        int n = int.Parse(args[2]), threads = int.Parse(args[3]);
        using (var model = Model.Load(args[0]))
        using (var s = model.CreateSession(new SessionOptions { Threads = threads }))
        {
            long bytes = 0;
            var o = new GenerateOptions { MaxTokens = n, Temperature = 0, IgnoreEos = true };
            GenerateResult r;
            if (args.Length > 4 && args[4] == "stream")
            {
                // Through Session.Stream: the producer thread and the queue of TextStream.
                var stream = s.Stream(args[1], o);
                foreach (string piece in stream) bytes += piece.Length;
                r = stream.Result;
            }
            else
            {
                r = s.Generate(args[1], o, piece => bytes += piece.Length);
            }
            Console.WriteLine("prompt {0} tok, generated {1} tok, prefill {2:0.0} tok/s, decode {3:0.0} tok/s, stop: {4}",
                r.PromptTokens, r.GeneratedTokens, r.PromptTokens / r.PromptTime.TotalSeconds, r.TokensPerSecond,
                r.StopReason);
        }
        return 0;
    }
}

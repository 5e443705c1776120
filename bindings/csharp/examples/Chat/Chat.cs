// A console chat over zerfoo: renders the conversation with the model's chat template, streams
// the reply, Ctrl-C stops the reply (not the program). Build and run (Mono):
//   mcs -out:Chat.exe -r:Zerfoo.dll examples/Chat/Chat.cs
//   ZERFOO_LIBRARY=build/libzerfoo.so.0 mono Chat.exe model.gguf [-n MAX_TOKENS] [-s SYSTEM]
// Each turn re-renders the whole conversation into a fresh session (simple and always correct
// for any template; a long chat would keep the KV cache and send only the new turn).
using System;
using System.Collections.Generic;
using System.Threading;
using Zerfoo;

static class Chat
{
    static int Main(string[] args)
    {
        if (args.Length < 1)
        {
            Console.Error.WriteLine("usage: Chat.exe MODEL.gguf [-n MAX_TOKENS] [-s SYSTEM_PROMPT]");
            return 2;
        }
        int maxTokens = 256;
        var history = new List<ChatMessage>();
        for (int i = 1; i + 1 < args.Length; i += 2)
        {
            if (args[i] == "-n") maxTokens = int.Parse(args[i + 1]);
            else if (args[i] == "-s") history.Add(ChatMessage.System(args[i + 1]));
        }
        try
        {
            using (var model = Model.Load(args[0]))
            {
                Console.Error.WriteLine("zerfoo " + Library.Version + ": " + model.Info);
                CancellationTokenSource reply = null;
                Console.CancelKeyPress += (s, e) =>
                {
                    var r = reply;
                    if (r != null) { e.Cancel = true; r.Cancel(); }
                };
                for (;;)
                {
                    Console.Write("> ");
                    string line = Console.ReadLine();
                    if (line == null) break;
                    if (line.Trim().Length == 0) continue;
                    history.Add(ChatMessage.User(line));
                    string prompt = model.ApplyChatTemplate(history);
                    var text = new System.Text.StringBuilder();
                    reply = new CancellationTokenSource();
                    using (var session = model.CreateSession())
                    {
                        var stream = session.Stream(prompt, new GenerateOptions { MaxTokens = maxTokens, Temperature = 0.7f },
                                                    reply.Token);
                        try
                        {
                            foreach (string piece in stream)
                            {
                                Console.Write(piece);
                                text.Append(piece);
                            }
                        }
                        catch (OperationCanceledException)
                        {
                            Console.Write(" [stopped]");
                        }
                        Console.WriteLine();
                        var r = stream.Result;
                        if (r != null)
                            Console.Error.WriteLine("({0} tokens, {1:0.0} tok/s, {2})", r.GeneratedTokens, r.TokensPerSecond, r.StopReason);
                    }
                    reply = null;
                    history.Add(ChatMessage.Assistant(text.ToString()));
                }
            }
            return 0;
        }
        catch (ZerfooException e)
        {
            Console.Error.WriteLine("error: " + e.Message);
            return 1;
        }
    }
}

// A console chat over zerfoo's chat turns: each reply is one turn (Session.StreamChatTurn) over
// the whole conversation, in one session that keeps what it already evaluated, so each turn
// evaluates only the new messages; Ctrl-C stops a reply (not the program). Build and run (Mono):
//   mcs -out:Chat.exe -r:Zerfoo.dll examples/Chat/Chat.cs
//   ZERFOO_LIBRARY=build/libzerfoo.so.0 mono Chat.exe model.gguf [-n MAX_TOKENS] [-s SYSTEM]
using System;
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
        var request = new ChatRequest();
        for (int i = 1; i + 1 < args.Length; i += 2)
        {
            if (args[i] == "-n") maxTokens = int.Parse(args[i + 1]);
            else if (args[i] == "-s") request.Messages.Add(ChatRequestMessage.System(args[i + 1]));
        }
        request.Generate = new GenerateOptions { MaxTokens = maxTokens, Temperature = 0.7f };
        try
        {
            using (var model = Model.Load(args[0]))
            using (var session = model.CreateSession())
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
                    request.Messages.Add(ChatRequestMessage.User(line));
                    reply = new CancellationTokenSource();
                    ChatTurnStream turn = session.StreamChatTurn(request, reply.Token);
                    try
                    {
                        foreach (TurnEvent e in turn)
                        {
                            if (e.Kind == TurnEventKind.Content) Console.Write(((TurnContent)e).Text);
                            else if (e.Kind == TurnEventKind.Reasoning) Console.Write(((TurnReasoning)e).Text);
                        }
                    }
                    catch (OperationCanceledException)
                    {
                        Console.Write(" [stopped]");
                    }
                    reply = null;
                    Console.WriteLine();
                    ChatTurnResult r = turn.Result;  // also after a stop: the reply so far
                    if (r == null) break;
                    if (r.Usage != null)
                        Console.Error.WriteLine("({0} tokens, {1} of the prompt's {2} kept from earlier turns, {3})",
                                                r.Usage.GeneratedTokens, r.Usage.CachedTokens, r.Usage.PromptTokens, r.FinishReason);
                    request.Messages.Add(ChatRequestMessage.From(r.Message));
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

using System.Reflection;
using System.Runtime.CompilerServices;

[assembly: AssemblyTitle("Zerfoo")]
[assembly: AssemblyDescription("C# binding for the zerfoo C ABI (libzerfoo.so.0)")]
[assembly: AssemblyVersion("0.6.0.0")]
// The tests read the live-handle counters and the stream's stop bookkeeping.
[assembly: InternalsVisibleTo("ZerfooTests")]

// Loads the library named by $ZERFOO_LIBRARY in a fresh process and prints what happened:
// "loaded VERSION" or "EXCEPTION-TYPE STATUS: MESSAGE". Driven by
// ZerfooTests.MissingOrIncompatibleLibraryIsOneClearException.
using System;
using Zerfoo;

static class LoadCheck
{
    static int Main()
    {
        try
        {
            Console.WriteLine("loaded " + Library.Version);
            return 0;
        }
        catch (ZerfooException e)
        {
            Console.WriteLine(e.GetType().FullName + " " + e.Status + ": " + e.Message);
            return 1;
        }
    }
}

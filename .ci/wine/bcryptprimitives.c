/* A stand-in for Windows' bcryptprimitives.dll, for wine before 9.0, which lacks it: Rust's
 * standard library takes its random numbers from ProcessPrng there (Windows 10 and later), so
 * no Rust program starts without it. This one forwards to RtlGenRandom (SystemFunction036 in
 * advapi32), which every wine has. Built by .ci/run into the wine prefix; CI only. */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len)
{
    while (len > 0) {
        ULONG n = len > 0x40000000 ? 0x40000000 : (ULONG)len;
        if (!SystemFunction036(data, n))
            return FALSE;
        data += n;
        len -= n;
    }
    return TRUE;
}

/* `mbsim plot` inputs: the first byte picks the kind (validate JSON or TSV,
 * sweep TSV, breakdown, gantt, memory); gnuplot is replaced by /bin/true, so
 * only mbsim's readers and converters run. Seeds: tests/fuzz/seeds/plot/. */
#include <string.h>

#include "fuzz_util.h"

int mb_cmd_plot(int argc, char **argv);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const kinds[] = {"validate", "validate", "sweep", "breakdown", "gantt", "memory"};
    static const char *const exts[] = {"json", "tsv", "tsv", "json", "json", "json"};
    if (!size)
        return 0;
    int k = data[0] % 6;
    setenv("MBSIM_GNUPLOT", "/bin/true", 1);
    char in[128], out[128], kind[16], o[] = "-o";
    snprintf(in, sizeof in, "%s", fuzz_tmp(data + 1, size - 1, exts[k]));
    snprintf(out, sizeof out, "/tmp/mbsim-fuzz-%d.png", (int)getpid());
    snprintf(kind, sizeof kind, "%s", kinds[k]);
    char *argv[] = {kind, in, o, out, NULL};
    mb_cmd_plot(4, argv);
    unlink(out);
    return 0;
}

/* `mbsim plot` inputs: the first byte picks the kind (validate JSON or TSV,
 * sweep TSV, breakdown, gantt, memory); mbsim's readers and converters write
 * the tidy TSV files gnuplot would read. gnuplot itself is replaced: by
 * /bin/true, started as mbsim starts gnuplot (fork, execv, wait), or, with
 * MBSIM_FUZZ_PARSE_ONLY set, by a stand-in in this process that is handed the
 * argv gnuplot would get and writes a one-byte chart to its output argument (no
 * process per input; cmd_plot.c is compiled here with MB_PLOT_RUN_HOOK). Temporary files go to
 * /dev/shm where it exists. Seeds: tests/fuzz/seeds/plot/. */
#include <string.h>

#include "fuzz_util.h"

int mb_cmd_plot(int argc, char **argv);
extern int (*mb_plot_run_hook)(const char *gp, char *const argv[]);

/* argv: gnuplot -c SCRIPT INFILE INFILE2 OUTFILE MBS_AXIS SUBJECT LEGEND (cmd_plot.c) */
static int no_gnuplot(const char *gp, char *const argv[])
{
    (void)gp;
    if (strcmp(argv[1], "-c") || !argv[5] || !argv[8] || argv[9])
        abort();
    FILE *f = fopen(argv[5], "wb");
    if (!f)
        return -1;
    fputc('x', f);
    fclose(f);
    return 0;
}

static char dir[16] = "/tmp";

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    if (access("/dev/shm", W_OK) == 0)
        snprintf(dir, sizeof dir, "/dev/shm");
    setenv("TMPDIR", dir, 1); /* the converters' temporary TSV files */
    setenv("MBSIM_GNUPLOT", "/bin/true", 1);
    if (fuzz_parse_only())
        mb_plot_run_hook = no_gnuplot;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const kinds[] = {"validate", "validate", "sweep", "breakdown", "gantt", "memory"};
    static const char *const exts[] = {"json", "tsv", "tsv", "json", "json", "json"};
    if (!size)
        return 0;
    int k = data[0] % 6;
    char in[128], out[128], kind[16], o[] = "-o";
    snprintf(in, sizeof in, "%s", fuzz_tmp(data + 1, size - 1, exts[k]));
    snprintf(out, sizeof out, "%s/mbsim-fuzz-%d.png", dir, (int)getpid());
    snprintf(kind, sizeof kind, "%s", kinds[k]);
    char *argv[] = {kind, in, o, out, NULL};
    mb_cmd_plot(4, argv);
    unlink(out);
    return 0;
}

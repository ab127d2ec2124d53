/* `mbsim sweep --set` lists: each input line is one --set argument applied to
 * the sweep of a small fixture scenario; then the grid size is taken. Seeds:
 * tests/fuzz/seeds/sweep_set/. */
#include <string.h>

#include "fuzz_util.h"
#include "mb_sweep.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct mb_sweep sw;
    struct mb_err e;
    mb_err_clear(&e);
    if (mb_sweep_load(MBSIM_SOURCE_DIR "/tests/data/keys/base.yaml", &sw, &e))
        abort(); /* the fixture must load */
    char *text = malloc(size + 1);
    memcpy(text, data, size);
    text[size] = '\0';
    for (char *line = text, *nl; line && !e.count; line = nl) {
        nl = strchr(line, '\n');
        if (nl)
            *nl++ = '\0';
        mb_sweep_set(&sw, line, &e);
    }
    (void)mb_sweep_size(&sw);
    free(text);
    mb_sweep_free(&sw);
    return 0;
}

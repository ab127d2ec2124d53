/*
 * cli_sets.c -- what the commands that take --set KEY=VALUES share beyond the
 * option parser: each scenario key once (cli.h cli_sets_once).
 */
#include "cli.h"

#include <stdio.h>
#include <string.h>

#include "mb_keys.h"
#include "mb_text.h"

/* The key table's entry a --set argument names (text before '='), or NULL. */
static const struct mb_key *cli__set_key(const char *set)
{
    char key[128];
    const char *eq = strchr(set, '=');
    size_t n = eq ? (size_t)(eq - set) : strlen(set);
    if (n >= sizeof key)
        return NULL;
    memcpy(key, set, n);
    key[n] = 0;
    return mb_key_find(key);
}

int cli_sets_once(const char *cmd, const char *const *sets, int n)
{
    for (int k = 1; k < n; k++) {
        const struct mb_key *b = cli__set_key(sets[k]);
        for (int j = 0; b && j < k; j++)
            if (cli__set_key(sets[j]) == b) {
                char first[256], second[256];
                mb_text_escape(first, sizeof first, sets[j], NULL);
                mb_text_escape(second, sizeof second, sets[k], NULL);
                fprintf(stderr, "%s: --set %s: --set %s gave %s a value already; give each key once\n", cmd, second,
                        first, b->key);
                return -1;
            }
    }
    return 0;
}

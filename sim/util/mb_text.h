/*
 * mb_text.h -- user text made safe to print (issue 37): a file with bytes
 * 0x80-0xff or control characters in a key or value had them pasted into
 * stderr (a terminal then ran escape sequences, a log got invalid UTF-8).
 *
 * Kept as is: printable ASCII and well-formed UTF-8 of printable characters
 * (RFC 3629: no overlong forms, no surrogates, at most U+10FFFF). Written as
 * \xNN (two upper-case hex digits per byte): every other byte: the C0
 * controls (tab and newline too), DEL, the bytes of a C1 control
 * (U+0080-U+009F, e.g. the CSI U+009B), and every byte of an invalid or cut
 * sequence. Escaping is idempotent (a backslash stays a backslash), so text
 * escaped once and quoted again is not escaped twice.
 */
#ifndef MB_TEXT_H
#define MB_TEXT_H

#include <stddef.h>
#include <stdio.h>

/**
 * @brief Copy src into dst (len bytes, NUL-terminated) with the bytes above
 * written as \xNN; output that does not fit is cut at a character boundary
 * (never inside an escape or a UTF-8 sequence).
 * @param keep  control characters to keep as they are (e.g. "\n"), or NULL
 * @return the length written (without the NUL)
 */
size_t mb_text_escape(char *dst, size_t len, const char *src, const char *keep);

/**
 * @brief A stream that writes what is printed to it into `to`, escaped as
 * mb_text_escape does, the control characters of `keep` (at most 7, e.g.
 * "\n") kept: for notes that quote input (import), and the command line's
 * whole standard error (main.c: messages that echo an argument).
 * A UTF-8 sequence split between two writes is joined first. Close it with
 * fclose (which flushes it; `to` stays open). Line-buffered (setvbuf may
 * change that before the first write). Never NULL (aborts as
 * mb_malloc does when it cannot be made).
 */
FILE *mb_text_escape_stream(FILE *to, const char *keep);

/**
 * @brief Column step of byte b: 1 when it starts a character, 0 when it
 * continues the UTF-8 sequence before it. *pend: the continuation bytes still
 * expected (0 at a line's start; kept by the caller). A byte that is not
 * well-formed UTF-8 (a stray continuation byte, a cut sequence) counts as one
 * column, as mb_text_escape writes it as one \xNN. The readers' column
 * numbers count characters, as libyaml's marks do, so a message's
 * file:line:col points at the same place in an editor whether the line
 * before it holds "cafe" or "café".
 */
static inline int mb_text_col_step(unsigned char b, int *pend)
{
    if ((b & 0xC0) == 0x80 && *pend > 0) {
        --*pend;
        return 0;
    }
    *pend = b >= 0xC2 && b <= 0xDF ? 1 : b >= 0xE0 && b <= 0xEF ? 2 : b >= 0xF0 && b <= 0xF4 ? 3 : 0;
    return 1;
}

/** @brief Move a 1-based line:column position past byte b: a newline starts the next line, any other
 * byte moves the column by mb_text_col_step (*pend: its state, 0 at a line's start). */
static inline void mb_text_pos_step(unsigned char b, int *line, int *col, int *pend)
{
    if (b == '\n') {
        ++*line;
        *col = 1;
        *pend = 0;
    } else {
        *col += mb_text_col_step(b, pend);
    }
}

/** @brief The columns (characters, mb_text_col_step) of the n bytes at s, from a line's start. */
static inline int mb_text_cols(const char *s, size_t n)
{
    int cols = 0, pend = 0;
    for (size_t i = 0; i < n; i++)
        cols += mb_text_col_step((unsigned char)s[i], &pend);
    return cols;
}

#endif /* MB_TEXT_H */

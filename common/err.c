#include "common/err.h"

#include <stdarg.h>
#include <stdio.h>

const char *err_name(int code)
{
    switch (code) {
#define ERR__NAME(name, value, text)                                                               \
    case value:                                                                                    \
        return #name;
        ERR_TABLE(ERR__NAME)
#undef ERR__NAME
    }
    return "ERR_?";
}

const char *err_text(int code)
{
    switch (code) {
#define ERR__TEXT(name, value, text)                                                               \
    case value:                                                                                    \
        return text;
        ERR_TABLE(ERR__TEXT)
#undef ERR__TEXT
    }
    return "unknown error";
}

int err_fmt(char *msg, size_t cap, int code, const char *fmt, ...)
{
    if (msg != NULL && cap > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, cap, fmt, ap);
        va_end(ap);
    }
    return code;
}

/* consumer.c - hashes "abc" through an installed hashbatch on the CPU
 * backend and checks it against FIPS 180's example digest. */
#include <hashbatch.h>
#include <stdio.h>
#include <string.h>

int main(void)
{
    static const unsigned char expected[20] = {0xa9, 0x99, 0x3e, 0x36, 0x47, 0x06, 0x81,
                                               0x6a, 0xba, 0x3e, 0x25, 0x71, 0x78, 0x50,
                                               0xc2, 0x6c, 0x9c, 0xd0, 0xd8, 0x9d};
    hb_config cfg;
    hb_config_init(&cfg);
    cfg.backend = HB_BACKEND_CPU;
    hb_engine *e;
    if (hb_engine_open(&e, &cfg) != HB_OK)
        return 1;
    hb_msg m = {"abc", 3};
    hb_digest d;
    hb_status st = hb_sha1_batch(e, &m, 1, &d);
    hb_engine_close(e);
    if (st != HB_OK || memcmp(d, expected, 20) != 0)
        return 1;
    printf("hashbatch %s: SHA-1(\"abc\") ok\n", hb_version_string());
    return 0;
}

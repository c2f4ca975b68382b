int ik_raw_placeholder(void) { return 0; }

#pragma once
int ik_raw_placeholder(void);

\c exp
create role relay_repl login replication;
create role relay_norepl login;
create table profile.secrets (id int primary key, payload_cipher text);
grant usage on schema profile to relay_repl, relay_norepl;

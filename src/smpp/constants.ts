/** SMPP v3.4 numeric constants, with reverse lookups for logs and metric labels. */

export const CommandId = {
  generic_nack: 0x80000000,
  bind_receiver: 0x00000001,
  bind_receiver_resp: 0x80000001,
  bind_transmitter: 0x00000002,
  bind_transmitter_resp: 0x80000002,
  query_sm: 0x00000003,
  query_sm_resp: 0x80000003,
  submit_sm: 0x00000004,
  submit_sm_resp: 0x80000004,
  deliver_sm: 0x00000005,
  deliver_sm_resp: 0x80000005,
  unbind: 0x00000006,
  unbind_resp: 0x80000006,
  replace_sm: 0x00000007,
  replace_sm_resp: 0x80000007,
  cancel_sm: 0x00000008,
  cancel_sm_resp: 0x80000008,
  bind_transceiver: 0x00000009,
  bind_transceiver_resp: 0x80000009,
  outbind: 0x0000000b,
  enquire_link: 0x00000015,
  enquire_link_resp: 0x80000015,
  submit_multi: 0x00000021,
  submit_multi_resp: 0x80000021,
  alert_notification: 0x00000102,
  data_sm: 0x00000103,
  data_sm_resp: 0x80000103,
} as const;

export type CommandName = keyof typeof CommandId;

const commandNameById = new Map<number, CommandName>();
for (const [name, id] of Object.entries(CommandId)) commandNameById.set(id, name as CommandName);

/** Command name for a command_id, or undefined when Ferry does not know it. */
export function commandName(id: number): CommandName | undefined {
  return commandNameById.get(id);
}

/** True for response command ids (high bit set). */
export function isResponseId(id: number): boolean {
  return (id & 0x80000000) !== 0;
}

export const CommandStatus = {
  ESME_ROK: 0x0000,
  ESME_RINVMSGLEN: 0x0001,
  ESME_RINVCMDLEN: 0x0002,
  ESME_RINVCMDID: 0x0003,
  ESME_RINVBNDSTS: 0x0004,
  ESME_RALYBND: 0x0005,
  ESME_RINVPRTFLG: 0x0006,
  ESME_RINVREGDLVFLG: 0x0007,
  ESME_RSYSERR: 0x0008,
  ESME_RINVSRCADR: 0x000a,
  ESME_RINVDSTADR: 0x000b,
  ESME_RINVMSGID: 0x000c,
  ESME_RBINDFAIL: 0x000d,
  ESME_RINVPASWD: 0x000e,
  ESME_RINVSYSID: 0x000f,
  ESME_RCANCELFAIL: 0x0011,
  ESME_RREPLACEFAIL: 0x0013,
  ESME_RMSGQFUL: 0x0014,
  ESME_RINVSERTYP: 0x0015,
  ESME_RINVNUMDESTS: 0x0033,
  ESME_RINVDLNAME: 0x0034,
  ESME_RINVDESTFLAG: 0x0040,
  ESME_RINVSUBREP: 0x0042,
  ESME_RINVESMCLASS: 0x0043,
  ESME_RCNTSUBDL: 0x0044,
  ESME_RSUBMITFAIL: 0x0045,
  ESME_RINVSRCTON: 0x0048,
  ESME_RINVSRCNPI: 0x0049,
  ESME_RINVDSTTON: 0x0050,
  ESME_RINVDSTNPI: 0x0051,
  ESME_RINVSYSTYP: 0x0053,
  ESME_RINVREPFLAG: 0x0054,
  ESME_RINVNUMMSGS: 0x0055,
  ESME_RTHROTTLED: 0x0058,
  ESME_RINVSCHED: 0x0061,
  ESME_RINVEXPIRY: 0x0062,
  ESME_RINVDFTMSGID: 0x0063,
  ESME_RX_T_APPN: 0x0064,
  ESME_RX_P_APPN: 0x0065,
  ESME_RX_R_APPN: 0x0066,
  ESME_RQUERYFAIL: 0x0067,
  ESME_RINVOPTPARSTREAM: 0x00c0,
  ESME_ROPTPARNOTALLWD: 0x00c1,
  ESME_RINVPARLEN: 0x00c2,
  ESME_RMISSINGOPTPARAM: 0x00c3,
  ESME_RINVOPTPARAMVAL: 0x00c4,
  ESME_RDELIVERYFAILURE: 0x00fe,
  ESME_RUNKNOWNERR: 0x00ff,
  /** SMPP v5.0 (no v3.4 equivalent): data_coding not supported. */
  ESME_RINVDCS: 0x0104,
} as const;

export type CommandStatusName = keyof typeof CommandStatus;

const statusNameByValue = new Map<number, string>();
for (const [name, value] of Object.entries(CommandStatus)) statusNameByValue.set(value, name);

/** Name for a command_status, e.g. `ESME_RTHROTTLED`; unknown values become `0x000000ab` so labels stay bounded per value. */
export function statusName(status: number): string {
  return statusNameByValue.get(status) ?? `0x${(status >>> 0).toString(16).padStart(8, '0')}`;
}

export const TlvTag = {
  dest_addr_subunit: 0x0005,
  dest_network_type: 0x0006,
  dest_bearer_type: 0x0007,
  dest_telematics_id: 0x0008,
  source_addr_subunit: 0x000d,
  source_network_type: 0x000e,
  source_bearer_type: 0x000f,
  source_telematics_id: 0x0010,
  qos_time_to_live: 0x0017,
  payload_type: 0x0019,
  additional_status_info_text: 0x001d,
  receipted_message_id: 0x001e,
  ms_msg_wait_facilities: 0x0030,
  privacy_indicator: 0x0201,
  source_subaddress: 0x0202,
  dest_subaddress: 0x0203,
  user_message_reference: 0x0204,
  user_response_code: 0x0205,
  source_port: 0x020a,
  destination_port: 0x020b,
  sar_msg_ref_num: 0x020c,
  language_indicator: 0x020d,
  sar_total_segments: 0x020e,
  sar_segment_seqnum: 0x020f,
  sc_interface_version: 0x0210,
  callback_num_pres_ind: 0x0302,
  callback_num_atag: 0x0303,
  number_of_messages: 0x0304,
  callback_num: 0x0381,
  dpf_result: 0x0420,
  set_dpf: 0x0421,
  ms_availability_status: 0x0422,
  network_error_code: 0x0423,
  message_payload: 0x0424,
  delivery_failure_reason: 0x0425,
  more_messages_to_send: 0x0426,
  message_state: 0x0427,
  congestion_state: 0x0428,
  ussd_service_op: 0x0501,
  display_time: 0x1201,
  sms_signal: 0x1203,
  ms_validity: 0x1204,
  alert_on_message_delivery: 0x130c,
  its_reply_type: 0x1380,
  its_session_info: 0x1383,
} as const;

export const DataCoding = {
  SMSC_DEFAULT: 0x00, // Ferry treats it as GSM-7, one septet per octet (unpacked)
  IA5: 0x01,
  OCTET_UNSPECIFIED: 0x02,
  LATIN1: 0x03,
  BINARY: 0x04,
  JIS: 0x05,
  CYRILLIC: 0x06,
  HEBREW: 0x07,
  UCS2: 0x08,
} as const;

export const EsmClass = {
  MODE_MASK: 0x03,
  MODE_DEFAULT: 0x00,
  MODE_DATAGRAM: 0x01,
  MODE_FORWARD: 0x02,
  MODE_STORE_FORWARD: 0x03,
  TYPE_MASK: 0x3c,
  MC_DELIVERY_RECEIPT: 0x04,
  SME_DELIVERY_ACK: 0x08,
  SME_MANUAL_ACK: 0x10,
  CONVERSATION_ABORT: 0x18,
  INTERMEDIATE_NOTIFICATION: 0x20,
  UDHI: 0x40,
  REPLY_PATH: 0x80,
} as const;

export const RegisteredDelivery = {
  NONE: 0x00,
  FINAL: 0x01,
  FAILURE_ONLY: 0x02,
  RECEIPT_MASK: 0x03,
  INTERMEDIATE: 0x10,
} as const;

export const MessageState = {
  SCHEDULED: 0,
  ENROUTE: 1,
  DELIVERED: 2,
  EXPIRED: 3,
  DELETED: 4,
  UNDELIVERABLE: 5,
  ACCEPTED: 6,
  UNKNOWN: 7,
  REJECTED: 8,
  SKIPPED: 9,
} as const;

/** Receipt `stat:` words (7 letters, as SMSCs write them) for each message_state. */
export const ReceiptStat: Record<number, string> = {
  [MessageState.SCHEDULED]: 'SCHEDUL',
  [MessageState.ENROUTE]: 'ENROUTE',
  [MessageState.DELIVERED]: 'DELIVRD',
  [MessageState.EXPIRED]: 'EXPIRED',
  [MessageState.DELETED]: 'DELETED',
  [MessageState.UNDELIVERABLE]: 'UNDELIV',
  [MessageState.ACCEPTED]: 'ACCEPTD',
  [MessageState.UNKNOWN]: 'UNKNOWN',
  [MessageState.REJECTED]: 'REJECTD',
  [MessageState.SKIPPED]: 'SKIPPED',
};

/** message_state for a receipt `stat:` word, tolerant of case and of the long spellings some vendors use. */
export function messageStateFromStat(stat: string): number | undefined {
  const s = stat.trim().toUpperCase();
  switch (s) {
    case 'DELIVRD': case 'DELIVERED': return MessageState.DELIVERED;
    case 'EXPIRED': return MessageState.EXPIRED;
    case 'DELETED': return MessageState.DELETED;
    case 'UNDELIV': case 'UNDELIVERABLE': return MessageState.UNDELIVERABLE;
    case 'ACCEPTD': case 'ACCEPTED': return MessageState.ACCEPTED;
    case 'UNKNOWN': return MessageState.UNKNOWN;
    case 'REJECTD': case 'REJECTED': return MessageState.REJECTED;
    case 'ENROUTE': return MessageState.ENROUTE;
    case 'SCHEDUL': case 'SCHEDULED': return MessageState.SCHEDULED;
    case 'SKIPPED': return MessageState.SKIPPED;
    default: return undefined;
  }
}

export const Ton = { UNKNOWN: 0, INTERNATIONAL: 1, NATIONAL: 2, NETWORK_SPECIFIC: 3, SUBSCRIBER: 4, ALPHANUMERIC: 5, ABBREVIATED: 6 } as const;
export const Npi = { UNKNOWN: 0, ISDN: 1, DATA: 3, TELEX: 4, LAND_MOBILE: 6, NATIONAL: 8, PRIVATE: 9, ERMES: 10, INTERNET: 14, WAP: 18 } as const;

export const INTERFACE_VERSION_34 = 0x34;

/** ussd_service_op values (SMPP v3.4 5.3.2.44). */
export const UssdServiceOp = {
  PSSD_INDICATION: 0,
  PSSR_INDICATION: 1,
  USSR_REQUEST: 2,
  USSN_REQUEST: 3,
  PSSD_RESPONSE: 16,
  PSSR_RESPONSE: 17,
  USSR_CONFIRM: 18,
  USSN_CONFIRM: 19,
} as const;

import type { CommandName } from './constants.js';
import type { BodyOf } from './schema.js';
import type { Tlvs } from './tlv.js';

export type { DestAddress, DestSmeAddress, DestDistributionList, UnsuccessSme, RequestCommand, ResponseCommand } from './schema.js';
export type { Tlvs, RawTlv, TlvName } from './tlv.js';

interface PduHead<C extends CommandName> {
  command: C;
  command_status: number;
  sequence_number: number;
  /** Optional parameters in wire order; absent when the PDU has none. */
  tlvs?: Tlvs;
}

/** A fully populated PDU of one command, as the decoder returns it. */
export type PduOf<C extends CommandName> = PduHead<C> & BodyOf<C>;

/** Any decoded PDU; narrow on `command`. */
export type Pdu = { [C in CommandName]: PduOf<C> }[CommandName];

/** What callers pass to the encoder or `Session.request`: missing body fields take their zero value. */
export type PduInputOf<C extends CommandName> = {
  command: C;
  command_status?: number;
  sequence_number?: number;
  tlvs?: Tlvs;
} & Partial<BodyOf<C>>;

export type PduInput = { [C in CommandName]: PduInputOf<C> }[CommandName];

export type SubmitSm = PduOf<'submit_sm'>;
export type DeliverSm = PduOf<'deliver_sm'>;
export type SubmitSmResp = PduOf<'submit_sm_resp'>;
export type DeliverSmResp = PduOf<'deliver_sm_resp'>;
export type BindPdu = PduOf<'bind_transmitter'> | PduOf<'bind_receiver'> | PduOf<'bind_transceiver'>;
export type BindRespPdu = PduOf<'bind_transmitter_resp'> | PduOf<'bind_receiver_resp'> | PduOf<'bind_transceiver_resp'>;
